package learningprocessor

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// gapsHandedOn describes the coverage gaps that the processor handed on, as
// "<workload> <direction> <backend> <cause> <node> <events>", sorted.
func gapsHandedOn(sink *consumertest.LogsSink) []string {
	var out []string
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var g learning.Gap
			if g.ReadFrom(lr) {
				out = append(out, fmt.Sprintf("%s %s %s %s %s %d", g.Workload, g.Direction, g.Backend, g.Cause, g.Node, g.Events))
			}
		})
	}
	slices.Sort(out)
	return out
}

// consumeGaps hands the processor the data plane's gaps, as a receiver does.
func consumeGaps(t *testing.T, p processor.Logs, gaps ...flow.Gap) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range gaps {
		gaps[i].AppendTo(sl)
	}
	if err := p.ConsumeLogs(t.Context(), ld); err != nil {
		t.Fatal(err)
	}
}

// TestNodeGapsGoToTheWorkloadsOnTheNode: the data plane's gap of a node is a
// coverage gap of each workload with a pod there, and of no other; a gap of
// every node is one of every workload; a gap record without a known cause is
// counted and dropped, and no gap record goes on as it came.
func TestNodeGapsGoToTheWorkloadsOnTheNode(t *testing.T) {
	p, fake, sink := startLearning(t)
	fake.PlaceOn("worker-1", frontend)
	fake.PlaceOn("worker-2", cart, frontend)
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

	consumeGaps(t, p, flow.Gap{Time: at, Provider: flow.ProviderCilium, Cause: flow.GapLostEvents, Node: "worker-1", Lost: 17})
	want := []string{"shop/Deployment/frontend  kubernetes LostEvents worker-1 17"}
	if got := gapsHandedOn(sink); !slices.Equal(got, want) {
		t.Fatalf("gaps %q, want %q", got, want)
	}
	// The processor hands on the coverage gap in place of the data plane's.
	if n := sink.LogRecordCount(); n != len(want) {
		t.Fatalf("%d records handed on, want the %d coverage gaps alone", n, len(want))
	}

	sink.Reset()
	consumeGaps(t, p, flow.Gap{Time: at, Provider: flow.ProviderCilium, Cause: flow.GapNodeUnreadable})
	want = []string{"shop/Deployment/cart  kubernetes NodeUnreadable  0", "shop/Deployment/frontend  kubernetes NodeUnreadable  0"}
	if got := gapsHandedOn(sink); !slices.Equal(got, want) {
		t.Fatalf("gaps of every node %q, want %q", got, want)
	}

	sink.Reset()
	consumeGaps(t, p, flow.Gap{Time: at, Provider: flow.ProviderCilium, Cause: "overheated", Node: "worker-1"})
	if got := gapsHandedOn(sink); len(got) != 0 || sink.LogRecordCount() != 0 {
		t.Fatalf("a gap of an unknown cause gave %q (%d records)", got, sink.LogRecordCount())
	}
}

// TestGapCounts: the counts that the metric records, by cause.
func TestGapCounts(t *testing.T) {
	fake := fixtureEnforcer()
	fake.PlaceOn("worker-1", frontend, cart)
	lp := &learningProcessor{cfg: createDefaultConfig().(*Config), enforcer: fake}
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	(&flow.Gap{Provider: flow.ProviderCilium, Cause: flow.GapLostEvents, Node: "worker-1", Lost: 5}).AppendTo(sl)
	(&flow.Gap{Provider: flow.ProviderCilium, Cause: flow.GapNodeUnreadable, Node: "worker-9"}).AppendTo(sl)
	(&flow.Gap{Provider: flow.ProviderCilium}).AppendTo(sl)
	gone := unknownPod("ghost", 3)
	gone.AppendTo(sl)
	_, c := lp.learnBatch(ld)
	// The flows to the unknown pod count once for its workload's ingress
	// and once for frontend's egress, which misses its peer.
	want := map[v1alpha1.CoverageGapCause]int64{v1alpha1.CoverageLostEvents: 1, v1alpha1.CoverageNodeUnreadable: 1,
		v1alpha1.CoverageUnattributed: 6}
	if fmt.Sprint(c.gaps) != fmt.Sprint(want) || c.dropped[reasonMalformedGap] != 1 {
		t.Fatalf("gap counts %v, dropped %v; want %v and one malformed gap", c.gaps, c.dropped, want)
	}
}

// unknownPod is an allowed flow from the fixture's frontend to a pod of
// workload name that the enforcer does not know, counting n connections; the
// data plane names the pod's Deployment.
func unknownPod(name string, n int64) flow.Record {
	f := ciliumFlow("10.0.1.10", "10.0.9.99", 8080, flow.OutcomeAllowed)
	f.Source = hubbleFrontend
	f.Destination.Namespace, f.Destination.Pod = "shop", name+"-5d8f7c9b4-gone1"
	f.Destination.WorkloadKind, f.Destination.WorkloadName = "Deployment", name
	f.Count = n
	return f
}

// TestUnattributedFlowsAreGapsOfTheirWorkload: flows to a pod that the cache
// does not know, of a workload that it does not know either, are a coverage
// gap of the workload that the data plane names for it, one a batch counting
// them all; a pod that the data plane names no workload of, or of a kind no
// proposal targets, is no one's. Each is a gap of the caller's egress too,
// whose peer could not be told; and none is learned.
func TestUnattributedFlowsAreGapsOfTheirWorkload(t *testing.T) {
	fake := fixtureEnforcer()
	p, sink := fake.StartLogsProcessor(t, NewFactory())
	nameless := unknownPod("job-runner", 1)
	nameless.Destination.WorkloadKind, nameless.Destination.WorkloadName = "", ""
	replicaSet := unknownPod("shard", 1)
	replicaSet.Destination.WorkloadKind = "ReplicaSet"
	consume(t, p, unknownPod("ghost", 2), unknownPod("ghost", 1), nameless, replicaSet)
	want := []string{"shop/Deployment/frontend Egress kubernetes Unattributed  5", "shop/Deployment/ghost Ingress kubernetes Unattributed  3"}
	if got := gapsHandedOn(sink); !slices.Equal(got, want) {
		t.Fatalf("gaps %q, want %q", got, want)
	}
	if edges, _ := emitted(sink); len(edges) != 0 {
		t.Fatalf("edges learned from flows that could not be attributed: %+v", edges)
	}
}

// TestAGonePodOfAKnownWorkloadIsItsWorkloads: a flow that names a pod that
// the cache no longer knows, and the pod's workload (Hubble's workloads),
// is attributed to that workload by name when the cache knows it; never by
// the pod's address, which another pod may hold by now.
func TestAGonePodOfAKnownWorkloadIsItsWorkloads(t *testing.T) {
	fake := fixtureEnforcer()
	p, sink := fake.StartLogsProcessor(t, NewFactory())
	gone := unknownPod("cart", 1)
	gone.Destination.Address = "10.0.2.45" // now the address of an orders pod
	consume(t, p, gone)
	if got := gapsHandedOn(sink); len(got) != 0 {
		t.Fatalf("gaps %q, want none", got)
	}
	var peers []string
	edges, _ := emitted(sink)
	for _, e := range edges {
		peers = append(peers, fmt.Sprintf("%s %s %s", e.Workload, e.Direction, e.Peer))
	}
	slices.Sort(peers)
	want := []string{"shop/Deployment/cart Ingress shop/Deployment/frontend", "shop/Deployment/frontend Egress shop/Deployment/cart"}
	if !slices.Equal(peers, want) {
		t.Fatalf("learned %q, want %q", peers, want)
	}
}
