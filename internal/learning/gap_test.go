package learning

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/logsfuzz"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// TestGapRoundTrip: a coverage gap reads back as it was written, with and
// without its optional node, direction and count.
func TestGapRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	web := workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	for _, g := range []Gap{
		{Workload: web, Backend: v1alpha1.BackendCilium, Cause: v1alpha1.CoverageLostEvents, Node: "worker-2", Events: 17, Time: at},
		{Workload: web, Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress, Cause: v1alpha1.CoverageUnattributed, Events: 3, Time: at},
		{Workload: web, Backend: v1alpha1.BackendIstio, Cause: v1alpha1.CoverageNodeUnreadable, Time: at},
		// Merged by a reader: three reports, the first two seconds earlier.
		{Workload: web, Backend: v1alpha1.BackendCilium, Cause: v1alpha1.CoverageLostEvents, Node: "worker-2", Events: 51, Time: at,
			Reports: 3, First: at.Add(-2 * time.Second)},
	} {
		sl := plog.NewScopeLogs()
		g.AppendTo(sl)
		var got Gap
		if !got.ReadFrom(sl.LogRecords().At(0)) || got != g {
			t.Errorf("wrote %+v, read %+v", g, got)
		}
	}
	one := Gap{Time: at}
	if one.ReportCount() != 1 || !one.FirstTime().Equal(at) {
		t.Errorf("one report: %d reports, first at %s", one.ReportCount(), one.FirstTime())
	}
	lr := plog.NewLogRecord()
	lr.SetEventName(GapEventName)
	if (&Gap{}).ReadFrom(lr) {
		t.Error("a gap record without a workload or cause was read")
	}
}

// FuzzReadGap reads arbitrary OTLP logs as coverage gaps, as the writer does
// with what a reader replica sends its leader: nothing panics, and a gap read
// has a cause, a workload and no negative count.
func FuzzReadGap(f *testing.F) {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	(&Gap{Workload: workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}, Backend: v1alpha1.BackendCilium,
		Cause: v1alpha1.CoverageLostEvents, Node: "worker-2", Events: 17, Time: time.Unix(1700000000, 0)}).AppendTo(sl)
	bad := plog.NewLogs()
	ld.CopyTo(bad)
	bad.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().PutStr(AttrGapEvents, "many") // the wrong type
	logsfuzz.Seed(f, ld, bad)
	f.Fuzz(func(t *testing.T, b []byte) {
		logsfuzz.Each(b, func(_ plog.ResourceLogs, lr plog.LogRecord) {
			var g Gap
			if g.ReadFrom(lr) && (g.Cause == "" || g.Workload.Name == "" || g.Events < 0 || g.ReportCount() < 1 || g.FirstTime().After(g.Time)) {
				t.Fatalf("a gap read as %+v", g)
			}
		})
	})
}
