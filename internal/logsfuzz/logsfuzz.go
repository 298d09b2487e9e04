// Package logsfuzz is what the fuzz targets of records read from the wire
// share: seeds written as OTLP logs, and a walk of the records of whatever
// bytes the fuzzer makes that are OTLP logs.
package logsfuzz

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Seed adds to f each of lds as OTLP bytes, and the empty input.
func Seed(f *testing.F, lds ...plog.Logs) {
	f.Helper()
	m := &plog.ProtoMarshaler{}
	for _, ld := range lds {
		b, err := m.MarshalLogs(ld)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
}

// Each calls fn with every record of b, read as OTLP logs, and its resource's
// logs; nothing when b is not OTLP logs.
func Each(b []byte, fn func(plog.ResourceLogs, plog.LogRecord)) {
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
	if err != nil {
		return
	}
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				fn(rl, lr)
			}
		}
	}
}
