package leaderexporter

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// TestAggregatorMergesEqualRecords: records equal but for their flows are one,
// with the flows summed, the newest time and the first seen; any other
// difference (the port, the kind of record) keeps records apart.
func TestAggregatorMergesEqualRecords(t *testing.T) {
	a := newAggregator()
	ld, sl := newScope()
	appendEdge(sl, 8080, 3, 10*time.Second)
	appendEdge(sl, 8080, 5, 30*time.Second)
	appendEdge(sl, 8080, 2, 20*time.Second)
	appendEdge(sl, 9090, 1, 5*time.Second)
	appendObservation(sl, 8080, 4, time.Second)
	appendObservation(sl, 8080, 6, 2*time.Second)
	if full := a.addBatch(ld, 100); len(full) != 0 {
		t.Fatalf("%d batches taken below max_edges", len(full))
	}
	if a.len() != 3 {
		t.Fatalf("%d records held, want 3", a.len())
	}
	out, ok := a.take()
	if !ok {
		t.Fatal("nothing taken")
	}
	got := records(out)
	if len(got) != 3 {
		t.Fatalf("%d records taken, want 3", len(got))
	}
	type want struct {
		event       string
		port, flows int64
		newest      time.Duration
		first       time.Duration
	}
	for i, w := range []want{
		{learning.EventName, 8080, 10, 30 * time.Second, 10 * time.Second},
		{learning.EventName, 9090, 1, 5 * time.Second, 5 * time.Second},
		{learning.ObservationEventName, 8080, 10, 2 * time.Second, time.Second},
	} {
		lr := got[i]
		if lr.EventName() != w.event || portOf(lr) != w.port || flowsOf(lr) != w.flows ||
			lr.Timestamp() != pcommon.NewTimestampFromTime(base.Add(w.newest)) ||
			lr.ObservedTimestamp() != pcommon.NewTimestampFromTime(base.Add(w.first)) {
			t.Errorf("record %d: %s port %d flows %d at %s, first seen %s; want %+v", i, lr.EventName(), portOf(lr), flowsOf(lr),
				lr.Timestamp().AsTime().Sub(base), lr.ObservedTimestamp().AsTime().Sub(base), w)
		}
	}
	if a.len() != 0 {
		t.Fatalf("%d records held after take", a.len())
	}
	if _, ok := a.take(); ok {
		t.Fatal("an empty aggregator gave a batch")
	}
}

// TestAggregatorMergesGaps: coverage gaps of one workload, cause and node
// are one, whatever their counts: their lost events and reports add up (a
// gap without a count is one report), the newest time and the first; a gap of
// another node or cause stays apart. What the writer reads of the merged
// gap is what it reads of them one by one.
func TestAggregatorMergesGaps(t *testing.T) {
	a := newAggregator()
	ld, sl := newScope()
	gap := func(node string, cause v1alpha1.CoverageGapCause, events int64, at time.Duration) {
		g := learning.Gap{Workload: web, Backend: v1alpha1.BackendKubernetes, Cause: cause, Node: node, Events: events, Time: base.Add(at)}
		g.AppendTo(sl)
	}
	gap("worker-1", v1alpha1.CoverageLostEvents, 17, 2*time.Second)
	gap("worker-1", v1alpha1.CoverageLostEvents, 3, time.Second)
	gap("worker-1", v1alpha1.CoverageLostEvents, 0, 3*time.Second) // a notice that gives no count
	gap("worker-2", v1alpha1.CoverageLostEvents, 5, time.Second)
	gap("worker-1", v1alpha1.CoverageNodeUnreadable, 0, time.Second)
	a.addBatch(ld, 100)
	// A merged gap merges again, as the next interval's would at a reader
	// that sent nothing meanwhile.
	ld, sl = newScope()
	(&learning.Gap{Workload: web, Backend: v1alpha1.BackendKubernetes, Cause: v1alpha1.CoverageLostEvents, Node: "worker-1",
		Events: 10, Reports: 4, First: base, Time: base.Add(2 * time.Second)}).AppendTo(sl)
	a.addBatch(ld, 100)
	out, _ := a.take()
	got := records(out)
	if len(got) != 3 {
		t.Fatalf("%d records taken, want 3", len(got))
	}
	var g learning.Gap
	if !g.ReadFrom(got[0]) || g.Node != "worker-1" || g.Cause != v1alpha1.CoverageLostEvents ||
		g.ReportCount() != 7 || g.Events != 30 || !g.FirstTime().Equal(base) || !g.Time.Equal(base.Add(3*time.Second)) {
		t.Errorf("worker-1's lost events: %+v; want 7 reports of 30 events from base to base+3s", g)
	}
	if !g.ReadFrom(got[1]) || g.Node != "worker-2" || g.ReportCount() != 1 || g.Events != 5 || !g.FirstTime().Equal(base.Add(time.Second)) {
		t.Errorf("worker-2's lost events: %+v; want the one report as it was", g)
	}
	if !g.ReadFrom(got[2]) || g.Cause != v1alpha1.CoverageNodeUnreadable || g.ReportCount() != 1 || g.Events != 0 {
		t.Errorf("worker-1 unreadable: %+v; want the one report as it was", g)
	}
}

// TestEdgesWithoutFlowsMerge: a learned edge without an observation (the
// learning processor's observe off) is kept once, still without flows.
func TestEdgesWithoutFlowsMerge(t *testing.T) {
	a := newAggregator()
	ld, sl := newScope()
	for range 3 {
		e := learning.Edge{Backend: "kubernetes", Workload: web, Direction: "Ingress", Peer: api, Protocol: "tcp", Port: 80}
		e.AppendTo(sl)
	}
	if full := a.addBatch(ld, 100); len(full) != 0 {
		t.Fatalf("%d batches taken below max_edges", len(full))
	}
	out, _ := a.take()
	got := records(out)
	if len(got) != 1 || flowsOf(got[0]) != -1 {
		t.Fatalf("%d records, flows %d; want 1 without flows", len(got), flowsOf(got[0]))
	}
}

// sinkExporter stands for the exporter helper: it keeps what it is handed.
type sinkExporter struct {
	consumertest.LogsSink
	component.StartFunc
	component.ShutdownFunc
}

// newTestExporter returns the exporter with cfg, whose exporter helper is a
// sink, started.
func newTestExporter(t *testing.T, cfg *Config) (*leaderExporter, *sinkExporter) {
	t.Helper()
	e, err := newLeaderExporter(exportertest.NewNopSettings(metadata.Type), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &sinkExporter{}
	e.inner = sink
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return e, sink
}

// TestCandidatesGoAtOnceWhileEdgesWait: a batch's violation candidates (and
// any record that is not an edge or an observation) are handed on in the
// call, its edges only at the interval's end, here the shutdown, merged.
func TestCandidatesGoAtOnceWhileEdgesWait(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Aggregation.Interval = time.Hour // never within the test: the shutdown flushes
	e, sink := newTestExporter(t, cfg)

	ld, sl := newScope()
	appendEdge(sl, 8080, 3, time.Second)
	appendCandidate(sl, 40000, time.Second)
	appendEdge(sl, 8080, 4, 2*time.Second)
	other := sl.LogRecords().AppendEmpty()
	other.SetEventName("something.else")
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	got := records(sink.AllLogs()...)
	if len(got) != 2 || got[0].EventName() != learning.CandidateEventName || got[1].EventName() != "something.else" {
		t.Fatalf("handed on at once: %d records, want the candidate and the other record", len(got))
	}
	if e.agg.len() != 1 {
		t.Fatalf("%d edges held, want 1", e.agg.len())
	}

	// A batch of edges alone waits as well.
	ld, sl = newScope()
	appendEdge(sl, 8080, 5, 3*time.Second)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if n := sink.LogRecordCount(); n != 2 {
		t.Fatalf("%d records handed on, want still 2", n)
	}

	for range 2 { // a second Shutdown is harmless
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	got = records(sink.AllLogs()...)
	if len(got) != 3 {
		t.Fatalf("%d records handed on after the shutdown, want 3", len(got))
	}
	edge := got[2]
	if edge.EventName() != learning.EventName || flowsOf(edge) != 12 || edge.Timestamp() != pcommon.NewTimestampFromTime(base.Add(3*time.Second)) {
		t.Fatalf("merged edge: %s, flows %d at %s; want the edge of 12 flows at 3s", edge.EventName(), flowsOf(edge), edge.Timestamp().AsTime().Sub(base))
	}
}

// TestMaxEdgesFlushesEarly: reaching max_edges distinct edges hands them on in
// the call that reached it; the next ones wait.
func TestMaxEdgesFlushesEarly(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Aggregation.Interval, cfg.Aggregation.MaxEdges = time.Hour, 2
	e, sink := newTestExporter(t, cfg)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })

	ld, sl := newScope()
	appendEdge(sl, 1, 1, time.Second)
	appendEdge(sl, 1, 1, time.Second) // the same edge: still one held
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if n := sink.LogRecordCount(); n != 0 {
		t.Fatalf("%d records handed on below max_edges", n)
	}
	ld, sl = newScope()
	appendEdge(sl, 2, 1, time.Second)
	appendEdge(sl, 3, 1, time.Second)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	got := records(sink.AllLogs()...)
	if len(got) != 2 || portOf(got[0]) != 1 || flowsOf(got[0]) != 2 || portOf(got[1]) != 2 {
		t.Fatalf("handed on at max_edges: %d records, want ports 1 (2 flows) and 2", len(got))
	}
	if e.agg.len() != 1 {
		t.Fatalf("%d edges held, want the third", e.agg.len())
	}
}

// TestABatchWithoutEdgesIsHandedOnAsItIs: nothing is copied when nothing waits.
func TestABatchWithoutEdgesIsHandedOnAsItIs(t *testing.T) {
	e, sink := newTestExporter(t, createDefaultConfig().(*Config))
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	appendCandidate(sl, 2, 0)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	all := sink.AllLogs()
	if len(all) != 1 || all[0].LogRecordCount() != 2 {
		t.Fatalf("batches %d, want the one batch", len(all))
	}
}

// TestProgressGoesWithTheRecordsItCovers: a source's progress records merge
// into the newest of each key; when max_edges takes the held records in the
// middle of a batch, the batch's progress goes in the take after its last
// record, never ahead of a record that it covers.
func TestProgressGoesWithTheRecordsItCovers(t *testing.T) {
	a := newAggregator()
	ld, sl := newScope()
	flowsource.WriteProgress(sl.LogRecords().AppendEmpty(), flowsource.Mark{Key: "node-1", Time: base.Add(time.Second)})
	appendEdge(sl, 8080, 1, time.Second)
	flowsource.WriteProgress(sl.LogRecords().AppendEmpty(), flowsource.Mark{Key: "node-1", Time: base.Add(3 * time.Second)})
	flowsource.WriteProgress(sl.LogRecords().AppendEmpty(), flowsource.Mark{Key: "node-2", Time: base.Add(2 * time.Second)})
	appendEdge(sl, 9090, 1, 2*time.Second)
	full := a.addBatch(ld, 2) // the two edges fill a take, the two keys another
	if len(full) != 2 {
		t.Fatalf("%d takes, want 2", len(full))
	}
	for _, lr := range records(full[0]) {
		if lr.EventName() == flowsource.ProgressEventName {
			t.Fatal("the progress went out with the take that max_edges asked for, in the middle of its batch")
		}
	}
	if _, ok := a.take(); ok {
		t.Fatal("something held after the takes")
	}
	out := full[1]
	got := map[string]time.Time{}
	for _, lr := range records(out) {
		m, ok := flowsource.ReadProgress(lr)
		if !ok {
			t.Fatalf("a %s record in the progress's take", lr.EventName())
		}
		got[m.Key] = m.Time
	}
	if len(got) != 2 || !got["node-1"].Equal(base.Add(3*time.Second)) || !got["node-2"].Equal(base.Add(2*time.Second)) {
		t.Fatalf("progress %v, want node-1 at +3s and node-2 at +2s", got)
	}
}
