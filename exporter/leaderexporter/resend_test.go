package leaderexporter

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// batchesOf lists, in arrival order, the batch numbers of the learned
// records that a leader received, and how many candidates came with none.
func batchesOf(t *testing.T, env *leaderEnv) (seqs []int64, unnumbered int) {
	t.Helper()
	sender := ""
	for _, ld := range env.sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			s, seq, ok := flowsource.BatchOf(rl.Resource())
			if !ok {
				unnumbered += rl.ScopeLogs().At(0).LogRecords().Len()
				continue
			}
			if sender != "" && s != sender {
				t.Fatalf("batches of two senders %q and %q from one reader", sender, s)
			}
			sender = s
			seqs = append(seqs, seq)
		}
	}
	return seqs, unnumbered
}

// consume hands the reader one batch of records.
func consume(t *testing.T, e interface {
	ConsumeLogs(context.Context, plog.Logs) error
}, fill func(plog.ScopeLogs)) {
	t.Helper()
	ld, sl := newScope()
	fill(sl)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// TestANewLeaderIsSentTheKeptBatches: the batches of learned records and of
// violation candidates are numbered in order and kept once a leader took
// them; when another leader process is located (a new address, or a new
// process at the same address), it is sent every kept batch again, in order
// and before the next, without waiting for one, each marked as taken before
// (that leader reported its violations already).
func TestANewLeaderIsSentTheKeptBatches(t *testing.T) {
	first, second, e, tel, reader := twoLeaders(t, 20*time.Millisecond)

	// The candidate goes at once, the edge with the next interval.
	consume(t, e, func(sl plog.ScopeLogs) { appendEdge(sl, 80, 3, 0); appendCandidate(sl, 1, 0) })
	waitFor(t, "the first two batches at the first leader", func() bool { seqs, _ := batchesOf(t, first); return len(seqs) == 2 })
	consume(t, e, func(sl plog.ScopeLogs) { appendEdge(sl, 81, 2, time.Second) })
	waitFor(t, "the third batch at the first leader", func() bool { seqs, _ := batchesOf(t, first); return len(seqs) == 3 })
	if seqs, unnumbered := batchesOf(t, first); seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 || unnumbered != 0 {
		t.Fatalf("the first leader got batches %v and %d records in none, want 1, 2, 3 and none", seqs, unnumbered)
	}
	for _, ld := range first.sink.AllLogs() {
		if flowsource.WasTaken(ld) {
			t.Fatal("the first leader got a batch marked as taken before")
		}
	}

	// The first leader dies; the second leads. No new record comes: the
	// kept batches go all the same.
	first.replica.Follow()
	second.replica.Lead()
	reader.SetLeaderAddress("127.0.0.2")
	waitFor(t, "the kept batches at the new leader", func() bool { seqs, _ := batchesOf(t, second); return len(seqs) == 3 })
	consume(t, e, func(sl plog.ScopeLogs) { appendEdge(sl, 82, 1, 2*time.Second) })
	waitFor(t, "the fourth batch at the new leader", func() bool { seqs, _ := batchesOf(t, second); return len(seqs) == 4 })
	seqs, unnumbered := batchesOf(t, second)
	if seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 || seqs[3] != 4 || unnumbered != 0 {
		t.Fatalf("the new leader got batches %v and %d records in none, want 1, 2, 3, 4 and none", seqs, unnumbered)
	}
	var ports []int64
	candidates := 0
	for i, ld := range second.sink.AllLogs() {
		if taken := flowsource.WasTaken(ld); taken != (i < 3) {
			t.Errorf("the new leader's batch %d marked as taken before: %v, want %v", seqs[i], taken, i < 3)
		}
		for _, lr := range records(ld) {
			switch lr.EventName() {
			case learning.EventName:
				ports = append(ports, portOf(lr))
			case learning.CandidateEventName:
				candidates++
			}
		}
	}
	if len(ports) != 3 || ports[0] != 80 || ports[1] != 81 || ports[2] != 82 || candidates != 1 {
		t.Errorf("the new leader's learned edges by port %v and %d candidates, want 80, 81, 82 and the one", ports, candidates)
	}
	if n := counter(tel, MetricRecordsResent, ""); n != 3 {
		t.Errorf("%s is %d, want the 3 records sent again", MetricRecordsResent, n)
	}

	// The same leader, another process (it restarted at the same address):
	// its memory is gone too. (Here the same receiver plays the restarted
	// process, and drops the candidate as one it took within its duplicate
	// window, with the batch of nothing else.)
	reader.SetLeaderIdentity("second-restarted")
	waitFor(t, "the kept batches at the restarted leader", func() bool { seqs, _ := batchesOf(t, second); return len(seqs) == 7 })
}

// TestKeptBatchesExpire: a batch is kept for the resend window after a
// leader took it, and not at all with a window of 0.
func TestKeptBatchesExpire(t *testing.T) {
	r := newResendable(2 * time.Minute)
	now := base
	for seq := range int64(3) {
		ld, sl := newScope()
		appendEdge(sl, 80, 1, 0)
		if n := r.number(ld); n != seq+1 {
			t.Fatalf("batch numbered %d, want %d", n, seq+1)
		}
		if n := r.number(ld); n != seq+1 {
			t.Fatalf("a batch tried again numbered %d, want its %d", n, seq+1)
		}
		r.took("leader-a", seq+1, ld, now.Add(time.Duration(seq)*time.Minute))
	}
	if again := r.toSendAgain("leader-a", 4, now.Add(2*time.Minute)); len(again) != 0 {
		t.Fatalf("the leader that took them is sent %d batches again", len(again))
	}
	// At 2m30s, the first batch (taken at 0) is past the 2m window.
	if again := r.toSendAgain("leader-b", 4, now.Add(150*time.Second)); len(again) != 2 {
		t.Fatalf("a new leader is sent %d batches, want the 2 within the window", len(again))
	}
	none := newResendable(0)
	ld, _ := newScope()
	none.took("leader-a", none.number(ld), ld, now)
	if none.len() != 0 {
		t.Fatal("a window of 0 keeps batches")
	}
}

// TestAResendCutShortGoesOn: when a send of the kept batches to a new leader
// fails midway (a timeout under load), the next try sends only those the
// new leader has not taken yet; another leader process gets them all.
func TestAResendCutShortGoesOn(t *testing.T) {
	r := newResendable(2 * time.Minute)
	now := base
	for range 3 {
		ld, sl := newScope()
		appendEdge(sl, 80, 1, 0)
		r.took("leader-a", r.number(ld), ld, now)
	}
	seqs := func(kept []keptBatch) []int64 {
		var out []int64
		for _, k := range kept {
			out = append(out, k.seq)
		}
		return out
	}
	again := r.toSendAgain("leader-b", 0, now)
	if got := seqs(again); len(got) != 3 {
		t.Fatalf("a new leader is sent %v, want the 3 kept batches", got)
	}
	r.resent("leader-b", again[0].seq, now) // the second send times out
	if got := seqs(r.toSendAgain("leader-b", 0, now.Add(time.Second))); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("the next try sends %v, want 2 and 3", got)
	}
	if got := seqs(r.toSendAgain("leader-c", 0, now.Add(time.Second))); len(got) != 3 {
		t.Fatalf("another leader process is sent %v, want all 3", got)
	}
	r.resent("leader-b", 2, now.Add(time.Second))
	r.resent("leader-b", 3, now.Add(time.Second))
	r.took("leader-b", 0, plog.Logs{}, now.Add(time.Second))
	if got := r.toSendAgain("leader-b", 0, now.Add(2*time.Second)); len(got) != 0 {
		t.Fatalf("the leader that took them all is sent %v again", seqs(got))
	}
}

// TestGapsAreNotSentAgain: a coverage gap is merged and sent with its
// interval's learned records, once; a new leader is sent the kept batch
// without it, since its writer does not count gaps by batch and would count
// it twice. An interval of gaps alone is not numbered, nor kept.
func TestGapsAreNotSentAgain(t *testing.T) {
	first, second, e, _, reader := twoLeaders(t, 20*time.Millisecond)

	gap := func(sl plog.ScopeLogs, node string) {
		(&learning.Gap{Workload: web, Backend: v1alpha1.BackendKubernetes, Cause: v1alpha1.CoverageLostEvents, Node: node, Events: 3, Time: base}).AppendTo(sl)
	}
	consume(t, e, func(sl plog.ScopeLogs) { appendEdge(sl, 80, 3, 0); gap(sl, "worker-1"); gap(sl, "worker-1") })
	waitFor(t, "the batch at the first leader", func() bool { return first.sink.LogRecordCount() == 2 })
	consume(t, e, func(sl plog.ScopeLogs) { gap(sl, "worker-2") })
	waitFor(t, "the gap alone at the first leader", func() bool { return first.sink.LogRecordCount() == 3 })
	seqs, unnumbered := batchesOf(t, first)
	if len(seqs) != 1 || seqs[0] != 1 || unnumbered != 1 {
		t.Fatalf("the first leader got batches %v and %d unnumbered records, want batch 1 and the gap alone", seqs, unnumbered)
	}
	var g learning.Gap
	if got := records(first.sink.AllLogs()...); !g.ReadFrom(got[1]) || g.ReportCount() != 2 || g.Events != 6 {
		t.Fatalf("the first leader's gap: %+v; want worker-1's two reports merged, 6 events", g)
	}

	first.replica.Follow()
	second.replica.Lead()
	reader.SetLeaderAddress("127.0.0.2")
	waitFor(t, "the kept batch at the new leader", func() bool { seqs, _ := batchesOf(t, second); return len(seqs) == 1 })
	got := records(second.sink.AllLogs()...)
	if len(got) != 1 || got[0].EventName() != learning.EventName {
		t.Fatalf("the new leader got %d records, want the learned edge alone", len(got))
	}
}

// TestWrittenBatchesAreNotKept: once the leader that took the batches says
// that it wrote them up to one (its Lease's written-through mark), the
// reader keeps only the later ones, and a new leader is sent only those; a
// mark of another leader process drops nothing.
func TestWrittenBatchesAreNotKept(t *testing.T) {
	first, second, e, tel, reader := twoLeaders(t, 20*time.Millisecond)
	for i := range 3 {
		consume(t, e, func(sl plog.ScopeLogs) { appendEdge(sl, uint32(80+i), 1, time.Duration(i)*time.Second) })
		waitFor(t, "the batch at the first leader", func() bool { seqs, _ := batchesOf(t, first); return len(seqs) == i+1 })
	}
	// The reader keeps a batch once the leader answered, which comes after
	// the leader handed it on.
	waitFor(t, "the 3 records taken to be kept", func() bool { return gauge(tel, MetricRecordsKept) == 3 })
	// The first leader wrote batches 1 and 2 of this reader.
	var mark atomic.Int64
	mark.Store(2)
	reader.PublishWritten("k8swriter", func() map[string]int64 {
		marks := map[string]int64{"another-reader": 9}
		for _, ld := range first.sink.AllLogs() {
			if s, _, ok := flowsource.BatchOf(ld.ResourceLogs().At(0).Resource()); ok {
				marks[s] = mark.Load()
			}
		}
		return marks
	})
	waitFor(t, "the written batches to go", func() bool { return gauge(tel, MetricRecordsKept) == 1 })

	// Another leader process leads: it is sent batch 3 only. A mark of
	// another leader process drops nothing.
	first.replica.Follow()
	second.replica.Lead()
	reader.SetLeaderAddress("127.0.0.2")
	waitFor(t, "the kept batch at the new leader", func() bool { seqs, _ := batchesOf(t, second); return len(seqs) == 1 })
	if seqs, _ := batchesOf(t, second); seqs[0] != 3 {
		t.Fatalf("the new leader was sent batch %v, want 3", seqs)
	}
	r := newResendable(time.Minute)
	ld, sl := newScope()
	appendEdge(sl, 80, 1, 0)
	r.took("leader-a", r.number(ld), ld, base)
	r.written("leader-b", 5)
	if r.len() != 1 || r.records.Load() != 1 {
		t.Fatalf("another leader's mark dropped a batch: %d kept, %d records", r.len(), r.records.Load())
	}
	r.written("leader-a", 1)
	if r.len() != 0 || r.records.Load() != 0 {
		t.Fatalf("the leader's mark kept %d batches, %d records", r.len(), r.records.Load())
	}
}

// gauge is the value of the exporter's gauge name; 0 before its first
// collection.
func gauge(tel *componenttest.Telemetry, name string) int64 {
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) == 0 {
		return 0
	}
	return g.DataPoints[0].Value
}
