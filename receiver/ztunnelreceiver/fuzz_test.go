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
		reason, ok := r.conv.convert(&l, now, &ev)
		if !ok {
			if reason == "" {
				t.Fatal("a dropped line without a reason")
			}
			return
		}
		flowsourcetest.CheckRecord(t, ev.rec)
		var out joined
		r.joiner.add(&ev, now, &out)
		r.joiner.flush(&out)
		for _, rec := range out.records {
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
