package flow

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/logsfuzz"
)

// TestGapRoundTrip: a gap record reads back as it was written; one without a
// cause is not a gap.
func TestGapRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, g := range []Gap{
		{Time: at, Provider: ProviderCilium, Cause: GapLostEvents, Node: "worker-2", Lost: 17},
		{Time: at, Provider: ProviderCilium, Cause: GapNodeUnreadable},
	} {
		sl := plog.NewScopeLogs()
		g.AppendTo(sl)
		var got Gap
		if !got.ReadFrom(sl.LogRecords().At(0)) || got != g {
			t.Errorf("wrote %+v, read %+v", g, got)
		}
	}
	lr := plog.NewLogRecord()
	lr.SetEventName(GapEventName)
	if (&Gap{}).ReadFrom(lr) {
		t.Error("a gap record without a cause was read")
	}
}

// FuzzReadGap reads arbitrary OTLP logs as gap records: nothing panics, and
// a gap read has a cause and no negative count.
func FuzzReadGap(f *testing.F) {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	(&Gap{Time: time.Unix(1700000000, 0), Provider: ProviderCilium, Cause: GapLostEvents, Node: "worker-2", Lost: 17}).AppendTo(sl)
	bad := plog.NewLogs()
	ld.CopyTo(bad)
	bad.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutInt(AttrGapLost, -5)
	logsfuzz.Seed(f, ld, bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		logsfuzz.Each(b, func(_ plog.ResourceLogs, lr plog.LogRecord) {
			var g Gap
			if g.ReadFrom(lr) && (g.Cause == "" || g.Lost < 0) {
				t.Fatalf("a gap read as %+v", g)
			}
		})
	})
}
