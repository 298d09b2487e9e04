package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	relaypb "github.com/cilium/cilium/api/v1/relay"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// coverageWindow is the writer's stable_after in the coverage test: how long
// a gap keeps a proposal not covered, and learning unsettled. Each step of
// the test must see its gaps written within it: on a machine that runs the
// other suites beside it, a step took 5 s.
const coverageWindow = 15 * time.Second

// proposalState is what the coverage test reads of a proposal.
type proposalState struct {
	target           workload.Ref
	coverage, ready  *metav1.Condition
	stable, evidence *metav1.Condition
	wouldBlock       *metav1.Condition
	gaps             []v1alpha1.CoverageGap
}

// proposalStates reads every proposal, by namespace/name.
func proposalStates(t *testing.T) map[string]proposalState {
	t.Helper()
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(context.Background(), &list))
	out := map[string]proposalState{}
	for _, p := range list.Items {
		c := p.Status.Conditions
		out[p.Namespace+"/"+p.Name] = proposalState{
			target:   workload.Target(p.Namespace, p.Spec.TargetRef),
			coverage: meta.FindStatusCondition(c, v1alpha1.ConditionCoverage), ready: meta.FindStatusCondition(c, v1alpha1.ConditionReady),
			stable: meta.FindStatusCondition(c, v1alpha1.ConditionStable), evidence: meta.FindStatusCondition(c, v1alpha1.ConditionEvidenceComplete),
			wouldBlock: meta.FindStatusCondition(c, v1alpha1.ConditionWouldBlock), gaps: p.Status.CoverageGaps,
		}
	}
	return out
}

// notCovered returns the proposals whose Coverage is False, with its reason.
func notCovered(states map[string]proposalState) map[string]string {
	out := map[string]string{}
	for name, s := range states {
		if s.coverage != nil && s.coverage.Status == metav1.ConditionFalse {
			out[name] = s.coverage.Reason
		}
	}
	return out
}

// workloadsOnNode returns the fixture's workloads with a pod on node.
func workloadsOnNode(node string) []workload.Ref {
	var out []workload.Ref
	for _, p := range clustertest.Pods() {
		if p.Node == node && p.WorkloadKind != "" && !p.HostNetwork {
			out = append(out, workload.Ref{Namespace: p.Namespace, Kind: v1alpha1.WorkloadKind(p.WorkloadKind), Name: p.WorkloadName})
		}
	}
	return out
}

// expectNotCovered is, of states, the proposals of the workloads ws, each
// with reason.
func expectNotCovered(states map[string]proposalState, reason string, ws ...workload.Ref) map[string]string {
	out := map[string]string{}
	for name, s := range states {
		if slices.Contains(ws, s.target) {
			out[name] = reason
		}
	}
	return out
}

// TestCoverageFollowsTheDataPlanesGaps: on a fake cluster of three nodes, the
// test relay's lost-event notice for one node makes exactly the proposals of
// the workloads with pods on that node not covered (LostEvents, with the
// count and the node), an unreadable node those of that node's workloads
// (NodeUnreadable), and a flow of a pod that the cache does not know the
// proposal of its workload and direction alone (Unattributed). Once no gap
// came for stable_after, every proposal is covered again, and Ready follows
// Stable, Coverage, EvidenceComplete and WouldBlock on each.
func TestCoverageFollowsTheDataPlanesGaps(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	all, err := dataplanetest.LoadHubble(repoFile(t, dataplanetest.HubbleFixture))
	must(t, err)
	var flows []*observer.GetFlowsResponse
	for _, r := range all {
		if r.GetFlow() != nil { // the fixture's own lost events come later, on purpose
			flows = append(flows, r)
		}
	}
	relay := dataplanetest.NewHubbleRelay(flows)
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{ObservedInterval: time.Second, StableAfter: coverageWindow})}
	p.Add(t, relayReceiver(t, certtest.NewCA(t, "cluster-ca"), relay, p.Settings, p.Processor))
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)

	var states map[string]proposalState
	waitUntil(t, "the fixture's proposals, covered", time.Minute, func() bool {
		states = proposalStates(t)
		if len(states) < 8 {
			return false
		}
		for _, s := range states {
			if s.coverage == nil || s.coverage.Status != metav1.ConditionTrue {
				return false
			}
		}
		return true
	})
	onWorker2, onWorker3 := workloadsOnNode("worker-2"), workloadsOnNode("worker-3")
	want := expectNotCovered(states, string(v1alpha1.CoverageLostEvents), onWorker2...)
	if len(want) == 0 || len(want) == len(states) {
		t.Fatalf("%d of %d proposals are of worker-2's workloads %v: the test tells nothing apart", len(want), len(states), onWorker2)
	}

	// Lost events on worker-2.
	lostAt := time.Now()
	lostOnWorker2 := func() *observer.GetFlowsResponse {
		return &observer.GetFlowsResponse{NodeName: "worker-2", Time: timestamppb.Now(),
			ResponseTypes: &observer.GetFlowsResponse_LostEvents{LostEvents: &flowpb.LostEvent{
				Source: flowpb.LostEventSource_PERF_EVENT_RING_BUFFER, NumEventsLost: 17}}}
	}
	relay.Push(lostOnWorker2())
	var got map[string]string
	waitUntil(t, "the proposals of worker-2's workloads not covered", time.Minute, func() bool {
		states = proposalStates(t)
		got = notCovered(states)
		return maps.Equal(got, want)
	})
	t.Logf("lost events on worker-2 of 3 nodes: %d of %d proposals not covered, %s after the notice: %v",
		len(got), len(states), time.Since(lostAt).Round(100*time.Millisecond), slices.Sorted(maps.Keys(got)))
	for name := range want {
		g := states[name].gaps
		if len(g) != 1 || g[0].Events != 17 || g[0].Reports != 1 || !slices.Equal(g[0].Nodes, []string{"worker-2"}) {
			t.Errorf("%s: coverage gaps %+v, want one report of 17 lost events on worker-2", name, g)
		}
		if c := states[name].coverage; !strings.Contains(c.Message, "the data plane lost 17 events on node worker-2") {
			t.Errorf("%s: Coverage message %q", name, c.Message)
		}
		if r := states[name].ready; r == nil || r.Status != metav1.ConditionFalse {
			t.Errorf("%s: Ready %+v while not covered", name, r)
		}
	}

	// worker-3 cannot be read; a pod that the cache does not know, of a
	// workload that it does not know either, calls cart: cart's ingress
	// misses a peer that could not be told; worker-2 loses events again, so
	// that its gap does not end while this step waits for the others.
	unknown := dataplanetest.End{Namespace: "shop", Pod: "ghost-7f8e9d0c1-gone1", IP: "10.0.9.99", Workload: "ghost", Identity: 51299}
	cartEnd := dataplanetest.End{Namespace: "shop", Pod: "cart-7f8e9d0c1-fghij", IP: "10.0.1.11", Workload: "cart", Identity: 51235}
	lastGapAt := time.Now()
	relay.Push(&observer.GetFlowsResponse{Time: timestamppb.Now(), ResponseTypes: &observer.GetFlowsResponse_NodeStatus{
		NodeStatus: &relaypb.NodeStatusEvent{StateChange: relaypb.NodeState_NODE_UNAVAILABLE, NodeNames: []string{"worker-3"}}}})
	relay.Push(dataplanetest.NewHubbleConnection(unknown, cartEnd, 41000, 8080, dataplanetest.ConnectionUnenforced)...)
	relay.Push(lostOnWorker2())
	cart := workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}
	maps.Copy(want, expectNotCovered(states, string(v1alpha1.CoverageNodeUnreadable), onWorker3...))
	want["shop/deployment-cart-ingress"] = string(v1alpha1.CoverageUnattributed)
	waitUntil(t, "worker-3's workloads and cart's ingress not covered", time.Minute, func() bool {
		states = proposalStates(t)
		got = notCovered(states)
		return maps.Equal(got, want)
	})
	if _, ok := got["shop/deployment-cart-egress"]; ok || !slices.Contains(workloadsOnNode("worker-1"), cart) {
		t.Errorf("cart's egress not covered, or cart not on worker-1: the unattributed ingress peer is cart's ingress's alone")
	}
	t.Logf("then worker-3 unreadable and an unknown pod calling cart: %d of %d proposals not covered: %v", len(got), len(states), got)

	// No gap for the window: every proposal is covered again, and Ready is
	// as its four conditions say.
	waitUntil(t, "every proposal covered again", time.Minute, func() bool {
		states = proposalStates(t)
		return len(notCovered(states)) == 0
	})
	t.Logf("covered again %s after the last gap (window %s)", time.Since(lastGapAt).Round(100*time.Millisecond), coverageWindow)
	readyCount := 0
	waitUntil(t, "Ready as the conditions say, on every proposal", time.Minute, func() bool {
		states = proposalStates(t)
		readyCount = 0
		for _, s := range states {
			if s.ready == nil || s.stable == nil || s.evidence == nil || s.wouldBlock == nil || s.coverage == nil {
				return false
			}
			want := s.stable.Status == metav1.ConditionTrue && s.coverage.Status == metav1.ConditionTrue &&
				s.evidence.Status == metav1.ConditionTrue && s.wouldBlock.Status == metav1.ConditionFalse
			if want != (s.ready.Status == metav1.ConditionTrue) {
				return false
			}
			if want {
				readyCount++
			}
		}
		return readyCount > 0
	})
	var why []string
	for name, s := range states {
		if s.ready.Status != metav1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s: %s", name, s.ready.Reason))
		}
	}
	slices.Sort(why)
	t.Logf("%d of %d proposals Ready; not ready: %v", readyCount, len(states), why)
}
