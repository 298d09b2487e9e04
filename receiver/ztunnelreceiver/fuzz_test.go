package ztunnelreceiver

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// fuzzReceiver is a receiver that is not started, so that no clock runs: the
// fuzz targets call its decoders directly.
func fuzzReceiver(tb testing.TB) (*ztunnelReceiver, *consumertest.LogsSink) {
	tb.Helper()
	sink := &consumertest.LogsSink{}
	cfg := createDefaultConfig().(*Config)
	r, err := newZtunnelReceiver(receivertest.NewNopSettings(metadata.Type), cfg, sink)
	if err != nil {
		tb.Fatal(err)
	}
	return r, sink
}

// FuzzLine fuzzes the line parser: a text as it arrives from a file or in an OTLP
// body (JSON, CRI-prefixed, a bare message). No input may panic, a drop must say
// why, and a line turned into an event must make a valid record.
func FuzzLine(f *testing.F) {
	fixture := loadFixture(f)
	for _, l := range fixture {
		f.Add([]byte(l))
	}
	for _, l := range splitLines(dataplanetest.CRI(fixture, time.Unix(0, 0), 100)) {
		f.Add([]byte(l))
	}
	r, _ := fuzzReceiver(f)
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		var l line
		result, reason := r.decodeText("fuzz", data, true, &l)
		if result == textMalformed && reason == "" {
			t.Fatal("a malformed text without a reason")
		}
		if result != textLine {
			return
		}
		var ev event
		reason, ok := r.conv.convert(&l, now, &ev, newInterner())
		if !ok {
			if reason == "" {
				t.Fatal("a dropped line without a reason")
			}
			return
		}
		flowsourcetest.CheckRecord(t, ev.record())
		var out joined
		r.joiner.add(&ev, now, &out)
		r.joiner.flush(&out)
		for _, rec := range outRecords(&out) {
			flowsourcetest.CheckRecord(t, rec)
		}
	})
}

// FuzzOTLPBody fuzzes the body-shape decoder: an OTLP logs export request in any
// shape fluent-bit sends, mutated. No input may panic, and every record handed
// on must be valid.
func FuzzOTLPBody(f *testing.F) {
	fixture := loadFixture(f)
	for _, build := range bodyShapes {
		b, err := plogotlp.NewExportRequestFromLogs(build(&testing.T{}, fixture[:6])).MarshalProto()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	r, sink := fuzzReceiver(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		req := plogotlp.NewExportRequest()
		if req.UnmarshalProto(data) != nil {
			return
		}
		sink.Reset()
		_ = r.consumeOTLP(context.Background(), inputOTLPGRPC, req.Logs())
		var out joined
		r.joiner.flush(&out)
		_ = r.emit(context.Background(), &out)
		for _, ld := range sink.AllLogs() {
			flow.EachLogRecord(ld, func(lr plog.LogRecord) {
				var rec flow.Record
				rec.ReadFrom(lr)
				if rec.Provider == flow.ProviderIstio && lr.EventName() == flow.EventName && rec.Transport != "" {
					flowsourcetest.CheckRecord(t, rec)
				}
			})
		}
	})
}

// FuzzScanJSON checks the scanner against the full parser: a line the scanner
// takes, the parser takes too, with the same fields; a line it does not take, it
// leaves l as it was. Both start from fields set before, as attributes set them.
func FuzzScanJSON(f *testing.F) {
	for _, l := range loadFixture(f) {
		f.Add(l)
	}
	for _, s := range []string{
		`{}`, ` { } `, `{"message":1,"message":"a"}`, `{"inbound":"x","inbound":{"peer":1,"peer":"b"}}`,
		`{"inbound":{"id":"1","peer":"10.0.0.1:1"},"inbound.peer":"c"}`, `{"a":[1],"message":"m"}`,
		`{"a":-1.5e+3,"b":true,"c":null,"d":false}`, `{"a":-}`, `{"a":"\"","message":"m"}`, `{"a":1,}`,
		`{"message":"m"} x`, `{"a":{"b":{}}}`, `{"a":nan}`, `{"a":+1}`,
	} {
		f.Add(s)
	}
	preset := line{Message: "set before", SrcAddr: "10.9.9.9:9"}
	preset.Inbound.Peer = "10.8.8.8:8"
	f.Fuzz(func(t *testing.T, s string) {
		scanned, parsed := preset, preset
		ok := scanned.scanJSON(s)
		err := parsed.decodeJSON(s)
		switch {
		case !ok && scanned != preset:
			t.Fatalf("the scanner did not take %q but changed the line: %+v", s, scanned)
		case !ok:
		case err != nil:
			t.Fatalf("the scanner took %q, which the parser refuses: %v", s, err)
		case scanned != parsed:
			t.Fatalf("%q:\nscanned %+v\n parsed %+v", s, scanned, parsed)
		}
	})
}
