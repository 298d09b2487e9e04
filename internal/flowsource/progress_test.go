package flowsource_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// TestProgressRecord: a progress record reads back as the mark it was written
// from; a record of another event, or without a key or a time, is not one.
func TestProgressRecord(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 123456789, time.UTC)
	lr := plog.NewLogRecord()
	flowsource.WriteProgress(lr, flowsource.Mark{Key: "node-1", Time: at})
	m, ok := flowsource.ReadProgress(lr)
	if !ok || m.Key != "node-1" || !m.Time.Equal(at) {
		t.Fatalf("read back %v %v", m, ok)
	}
	for name, mutate := range map[string]func(plog.LogRecord){
		"another event":  func(lr plog.LogRecord) { lr.SetEventName("network_enforcer.flow") },
		"no key":         func(lr plog.LogRecord) { lr.Attributes().Remove(flowsource.AttrProgressKey) },
		"an empty key":   func(lr plog.LogRecord) { lr.Attributes().PutStr(flowsource.AttrProgressKey, "") },
		"a key not text": func(lr plog.LogRecord) { lr.Attributes().PutInt(flowsource.AttrProgressKey, 7) },
		"no time":        func(lr plog.LogRecord) { lr.SetTimestamp(0) },
	} {
		c := plog.NewLogRecord()
		lr.CopyTo(c)
		mutate(c)
		if m, ok := flowsource.ReadProgress(c); ok {
			t.Errorf("%s: read as %v", name, m)
		}
	}
}
