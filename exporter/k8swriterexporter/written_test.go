package k8swriterexporter

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// TestABatchOfNoneOfItsRecordsIsWrittenThrough: the writer's written-through
// mark of a reader goes past a batch that holds none of its records (a
// batch of violation candidates, the violation processor's), so that the
// reader does not keep that batch for the writer's sake; a batch with an
// unwritten edge of its own holds the mark back until it is written.
func TestABatchOfNoneOfItsRecordsIsWrittenThrough(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	edge := func(seq int64) plog.Logs {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: 8080}
		e.AppendTo(sl)
		learning.SetObserved(sl.LogRecords().At(0), v1alpha1.PeerClassWorkload, 3, time.Now())
		flowsource.StampBatch(ld, "reader-c", seq)
		return ld
	}
	mark := func() int64 {
		t.Helper()
		_, seq, ok := fake.WrittenThrough("reader-c")
		if !ok {
			t.Fatal("no written-through mark of reader-c")
		}
		return seq
	}
	must(t, w.ConsumeLogs(context.Background(), edge(1)))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if got := mark(); got != 1 {
		t.Fatalf("written through %d after batch 1 was written, want 1", got)
	}

	// Batch 2 holds a violation candidate only: not the writer's.
	candidates := plog.NewLogs()
	lr := candidates.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(learning.CandidateEventName)
	flowsource.StampBatch(candidates, "reader-c", 2)
	must(t, w.ConsumeLogs(context.Background(), candidates))
	if got := mark(); got != 2 {
		t.Fatalf("written through %d after a batch of none of the writer's records, want 2", got)
	}

	// Batch 3 holds an edge that is not written yet.
	must(t, w.ConsumeLogs(context.Background(), edge(3)))
	if got := mark(); got != 2 {
		t.Fatalf("written through %d with batch 3 unwritten, want 2", got)
	}
}
