package violationprocessor

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// sendBatch hands the processor batch seq of reader-1, as the leader
// receiver hands on what a reader sent: n flows from intruder to cart on
// 8443, which the policy does not allow, each a candidate; taken marks it as
// a batch that a leader took before.
func sendBatch(t *testing.T, p processor.Logs, seq int64, n int, taken bool) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for range n {
		rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterDestination,
			Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
			Source: flow.Endpoint{Address: "10.0.0.3"}, Destination: flow.Endpoint{Address: "10.0.0.2", Port: 8443}}
		flows := plog.NewLogs()
		rec.AppendTo(flows.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
		learning.AppendCandidate(sl, flows.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0), cart, v1alpha1.DirectionIngress, nil)
	}
	flowsource.StampBatch(ld, "reader-1", seq)
	if taken {
		flowsource.MarkTaken(ld)
	}
	if err := p.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// drainAndCheck runs the status syncs queued and checks what the policy's
// status counts: violations, observed flows, and reader-1's last batch.
func drainAndCheck(t *testing.T, fake *enforcerextensiontest.Enforcer, when string, violations, flows, batch int64) {
	t.Helper()
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	st := fake.PolicyNow(cartPolicy).Status
	if st.ViolationCount != violations || observedFlows(&st) != flows || len(st.CountedBatches) != 1 || st.CountedBatches[0].Batch != batch {
		t.Fatalf("%s: %d violations, %d observed flows, counted batches %+v; want %d, %d and reader-1's %d",
			when, st.ViolationCount, observedFlows(&st), st.CountedBatches, violations, flows, batch)
	}
}

// observedFlows is the flows that the policy's status lists on its edges.
func observedFlows(st *v1alpha1.WorkloadNetworkPolicyStatus) int64 {
	var n int64
	for _, e := range st.Observed {
		n += e.Flows
	}
	return n
}

// TestABatchSentAgainIsCountedOncePerPolicy: a leader counts a reader's
// batches in the policy's status and says how far it wrote them; it dies
// holding a batch it took and did not write. The next leader is sent both
// again, marked as taken before: it skips the one that the status counts,
// counts the other, and reports neither as an event (the dead leader did);
// a batch that no leader took before is reported as ever.
func TestABatchSentAgainIsCountedOncePerPolicy(t *testing.T) {
	first, fake, sink := startViolations(t)
	fake.Lead()
	sendBatch(t, first, 1, 2, false)
	drainAndCheck(t, fake, "after the first batch", 2, 2, 1)
	if _, seq, ok := fake.WrittenThrough("reader-1"); !ok || seq != 1 {
		t.Fatalf("written through %d (%v), want 1", seq, ok)
	}
	// The second batch is taken and reported, and not written: the marks
	// stay where they were, so the reader keeps it.
	sendBatch(t, first, 2, 1, false)
	if _, seq, _ := fake.WrittenThrough("reader-1"); seq != 1 {
		t.Fatalf("written through %d with batch 2 unwritten, want 1", seq)
	}
	if n := eventsNamed(sink, violationevent.Observed); n != 3 {
		t.Fatalf("the first leader sent %d events, want 3", n)
	}

	// The first leader dies. The next one reads the policy as it was
	// written, and is sent both batches again.
	next, nextFake, nextSink := startViolations(t)
	nextFake.SetPolicy(fake.PolicyNow(cartPolicy))
	nextFake.Lead()
	sendBatch(t, next, 1, 2, true)
	sendBatch(t, next, 2, 1, true)
	drainAndCheck(t, nextFake, "after the batches sent again", 3, 3, 2)
	if n := eventsNamed(nextSink, violationevent.Observed); n != 0 {
		t.Fatalf("the next leader reported %d violations that a leader took before", n)
	}
	if _, seq, ok := nextFake.WrittenThrough("reader-1"); !ok || seq != 2 {
		t.Fatalf("written through %d (%v), want 2", seq, ok)
	}

	// The next batch comes to it first.
	sendBatch(t, next, 3, 1, false)
	if n := eventsNamed(nextSink, violationevent.Observed); n != 1 {
		t.Fatalf("the next leader reported %d violations of a new batch, want 1", n)
	}
	drainAndCheck(t, nextFake, "after a new batch", 4, 4, 3)
}

// TestAWriteOfViolationsSaysWhichBatchesItCounts: a status sync that writes
// a batch's violations within observed_interval of the last write of the
// observed edges writes them too, so that the status's countedBatches name
// that batch: a next leader sent it again then skips it, rather than
// counting its violations twice.
func TestAWriteOfViolationsSaysWhichBatchesItCounts(t *testing.T) {
	p, fake, _ := startViolations(t)
	fake.Lead()
	sendBatch(t, p, 1, 1, false)
	drainAndCheck(t, fake, "after the first batch", 1, 1, 1)
	sendBatch(t, p, 2, 1, false)
	drainAndCheck(t, fake, "after the second batch", 2, 2, 2)
}
