package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// The edges of the observed test: store/batch calls web/frontend, which it
// learns, and an address on the Internet, which (outside_peers drop) it does
// not.
var (
	batchPod    = flow.Endpoint{Address: "10.244.5.40"}
	frontendPod = flow.Endpoint{Address: "10.244.6.2", Port: 9090}
	paymentsAPI = flow.Endpoint{Address: "203.0.113.7", Port: 443, External: flow.ExternalWorld}
)

// TestProposalShowsWhatProtectWouldBlock: a proposal lists its observed
// edges with flows and verdicts, and says that protect would block the call
// to the Internet; a person tightens the spec by hand, and with no new flow
// the verdicts follow the new spec; the same flows again leave the spec as
// the person made it and count on.
func TestProposalShowsWhatProtectWouldBlock(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{ObservedInterval: time.Second})}
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	sendBatch(t, p, 3)

	var proposal v1alpha1.WorkloadNetworkPolicyProposal
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &proposal) })
	waitUntil(t, "the batch proposal with both observed edges", time.Minute, func() bool {
		got, ok := batchEgressProposal(t)
		proposal = got
		return ok && got.Status.ObservedEdges == 2 && edgeFlows(&got, "web", "") == 3 && edgeFlows(&got, "", paymentsAPI.Address) == 3
	})
	if v := verdictOf(&proposal, "web", ""); v != v1alpha1.VerdictAllowed {
		t.Errorf("the learned edge to web/frontend: verdict %s", v)
	}
	if v := verdictOf(&proposal, "", paymentsAPI.Address); v != v1alpha1.VerdictWouldBlock {
		t.Errorf("the call to the Internet: verdict %s", v)
	}
	c := meta.FindStatusCondition(proposal.Status.Conditions, v1alpha1.ConditionWouldBlock)
	if c == nil || c.Status != metav1.ConditionTrue || c.Message != "protect would block 1 observed edge: 1 External (an outside peer that the spec does not allow: learn it by its DNS name with outside_peers entities, or by its address with ip_blocks)" ||
		proposal.Status.WouldBlockEdges != 1 {
		t.Fatalf("WouldBlock %+v, wouldBlockEdges %d", c, proposal.Status.WouldBlockEdges)
	}

	// Tighten by hand: the egress rules go, egress stays governed.
	controlplanetest.Edit(t, env.Client, &proposal, func(p *v1alpha1.WorkloadNetworkPolicyProposal) {
		p.Spec.Kubernetes.Egress = []networkingv1.NetworkPolicyEgressRule{}
	})
	edited := proposal.Generation
	waitUntil(t, "the verdicts of the tightened spec", 30*time.Second, func() bool {
		got, ok := batchEgressProposal(t)
		proposal = got
		return ok && got.Status.WouldBlockEdges == 2
	})
	if v := verdictOf(&proposal, "web", ""); v != v1alpha1.VerdictWouldBlock {
		t.Errorf("after the edit, the edge to web/frontend: verdict %s", v)
	}
	if c := meta.FindStatusCondition(proposal.Status.Conditions, v1alpha1.ConditionWouldBlock); c == nil ||
		c.Message != "protect would block 2 observed edges: 1 Workload (a workload that no rule of the spec allows on that port), 1 External (an outside peer that the spec does not allow: learn it by its DNS name with outside_peers entities, or by its address with ip_blocks)" {
		t.Fatalf("after the edit: WouldBlock %+v", c)
	}

	// The same flows again: counted, and the person's spec stands.
	sendBatch(t, p, 2)
	waitUntil(t, "the repeated flows counted", 30*time.Second, func() bool {
		got, ok := batchEgressProposal(t)
		proposal = got
		return ok && edgeFlows(&got, "web", "") == 5
	})
	if proposal.Generation != edited || len(proposal.Spec.Kubernetes.Egress) != 0 {
		t.Fatalf("the writer changed the edited spec: generation %d -> %d, egress %+v", edited, proposal.Generation, proposal.Spec.Kubernetes.Egress)
	}
}

// sendBatch sends n flows of each of the test's edges.
func sendBatch(t *testing.T, p *pipeline, n int) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1}
	for range n {
		for _, dst := range []flow.Endpoint{frontendPod, paymentsAPI} {
			rec.Source, rec.Destination = batchPod, dst
			rec.AppendTo(sl)
		}
	}
	must(t, p.Processor.ConsumeLogs(context.Background(), ld))
}

// batchEgressProposal is store/batch's egress proposal, when it is written.
func batchEgressProposal(t *testing.T) (v1alpha1.WorkloadNetworkPolicyProposal, bool) {
	t.Helper()
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(context.Background(), &list))
	for _, p := range list.Items {
		if p.Namespace == "store" && p.Spec.TargetRef.Name == "batch" && p.Spec.Direction == v1alpha1.DirectionEgress {
			return p, true
		}
	}
	return v1alpha1.WorkloadNetworkPolicyProposal{}, false
}

// edge finds an observed edge of a proposal by its peer's namespace or address.
func edge(p *v1alpha1.WorkloadNetworkPolicyProposal, namespace, address string) *v1alpha1.ObservedEdge {
	return findEdge(p.Status.Observed, namespace, address)
}

// policyEdge finds an observed edge of a policy likewise.
func policyEdge(p *v1alpha1.WorkloadNetworkPolicy, namespace, address string) *v1alpha1.ObservedEdge {
	return findEdge(p.Status.Observed, namespace, address)
}

func findEdge(edges []v1alpha1.ObservedEdge, namespace, address string) *v1alpha1.ObservedEdge {
	for i := range edges {
		e := &edges[i]
		if (namespace != "" && e.Peer.Namespace == namespace) || (address != "" && e.Peer.Address == address) {
			return e
		}
	}
	return nil
}

func edgeFlows(p *v1alpha1.WorkloadNetworkPolicyProposal, namespace, address string) int64 {
	if e := edge(p, namespace, address); e != nil {
		return e.Flows
	}
	return 0
}

func verdictOf(p *v1alpha1.WorkloadNetworkPolicyProposal, namespace, address string) v1alpha1.ObservedVerdict {
	if e := edge(p, namespace, address); e != nil {
		return e.Verdict
	}
	return v1alpha1.ObservedVerdict(fmt.Sprintf("none (observed %+v)", p.Status.Observed))
}

// TestPolicyCarriesOnItsProposalsEvidence: a promoted policy starts from its
// proposal's observed edges and counts on, allowed flows too, with each rule's
// last use; its verdicts are its own spec's.
func TestPolicyCarriesOnItsProposalsEvidence(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{
		Violations: new(consumertest.LogsSink), StatusSyncInterval: time.Second, ObservedInterval: time.Second})}
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	sendBatch(t, p, 3)
	var proposal v1alpha1.WorkloadNetworkPolicyProposal
	waitUntil(t, "the batch proposal with both observed edges", time.Minute, func() bool {
		got, ok := batchEgressProposal(t)
		proposal = got
		return ok && got.Status.ObservedEdges == 2 && edgeFlows(&got, "web", "") == 3
	})
	policy := promoteCarrying(t, &proposal, 2)
	if got := policyEdge(policy, "web", ""); got == nil || got.Flows != 3 || got.Verdict != v1alpha1.VerdictAllowed {
		t.Fatalf("the carried edge to web/frontend: %+v", got)
	}
	if got := policyEdge(policy, "", paymentsAPI.Address); got == nil || got.Verdict != v1alpha1.VerdictWouldBlock {
		t.Fatalf("the carried call to the Internet: %+v", got)
	}
	waitUntil(t, "the proposal to go once its evidence is carried on", 30*time.Second, func() bool {
		_, ok := batchEgressProposal(t)
		return !ok
	})

	sendBatch(t, p, 2)
	waitUntil(t, "the policy to count on", 30*time.Second, func() bool {
		must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
		got := policyEdge(policy, "web", "")
		return got != nil && got.Flows == 5
	})
	if len(policy.Status.RuleUse) != 1 || policy.Status.RuleUse[0].Rule != "egress[0]" || policy.Status.RuleUse[0].Flows != 2 ||
		policy.Status.RuleUse[0].LastUsed == nil {
		t.Fatalf("rule use %+v", policy.Status.RuleUse)
	}
	if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionUnusedRules); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("UnusedRules %+v", c)
	}
	if c := meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWouldBlock); c == nil ||
		c.Message != "protect would block 1 observed edge: 1 External (an outside peer that the spec does not allow: learn it by its DNS name with outside_peers entities, or by its address with ip_blocks)" {
		t.Fatalf("WouldBlock %+v", c)
	}
}

// evidenceShape is one data plane's flows of two edges of one workload and
// direction: one that the proposal's spec allows, one that it leaves out.
type evidenceShape struct {
	name string
	// target is the proposal's namespace, workload and direction.
	namespace, workload string
	direction           v1alpha1.Direction
	records             []flow.Record
}

// evidenceShapes are the flows of store/batch's egress (to web/frontend on
// 9090, learned, and to an address on the Internet, left out) as Hubble and
// Goldmane give them, and of web/frontend's ingress (from store/batch,
// learned, and from a source outside the mesh, left out) as ztunnel does.
func evidenceShapes() []evidenceShape {
	now := time.Now()
	batch := flow.Endpoint{Address: "10.244.5.40", Namespace: "store", Pod: "batch-28391760-k8x2q",
		WorkloadKind: "CronJob", WorkloadName: "batch", Identity: "51234"}
	frontend := flow.Endpoint{Address: "10.244.6.2", Port: 9090, Namespace: "web", Pod: "frontend-84c9d6b7f-9zq1w",
		WorkloadKind: "Deployment", WorkloadName: "frontend", Identity: "63028"}
	world := flow.Endpoint{Address: "203.0.113.7", Port: 443, External: flow.ExternalWorld, Identity: "2"}
	hubble := func(dst flow.Endpoint) flow.Record {
		return flow.Record{Time: now, Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterSource,
			Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Source: batch, Destination: dst, Count: 1}
	}
	goldmane := func(dst flow.Endpoint) flow.Record {
		src := flow.Endpoint{Namespace: "store", Pod: "batch-28391760-*"}
		return flow.Record{Time: now, Provider: flow.ProviderCalico, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterSource,
			Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Source: src, Destination: dst, Count: 1}
	}
	ztunnel := func(src flow.Endpoint) flow.Record {
		dst := flow.Endpoint{Address: "10.244.6.2", Port: 9090, Namespace: "web", Pod: "frontend-84c9d6b7f-9zq1w",
			Identity: "cluster.local/ns/web/sa/frontend"}
		return flow.Record{Time: now, Provider: flow.ProviderIstio, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterDestination,
			Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Source: src, Destination: dst, Count: 1}
	}
	return []evidenceShape{
		{name: "hubble", namespace: "store", workload: "batch", direction: v1alpha1.DirectionEgress,
			records: []flow.Record{hubble(frontend), hubble(world)}},
		{name: "goldmane", namespace: "store", workload: "batch", direction: v1alpha1.DirectionEgress, records: []flow.Record{
			goldmane(flow.Endpoint{Namespace: "web", Pod: "frontend-84c9d6b7f-*", Port: 9090}),
			goldmane(flow.Endpoint{Address: "pub", Port: 443, External: flow.ExternalNetwork}),
		}},
		{name: "ztunnel", namespace: "web", workload: "frontend", direction: v1alpha1.DirectionIngress, records: []flow.Record{
			ztunnel(flow.Endpoint{Address: "10.244.5.40", Namespace: "store", Pod: "batch-28391760-k8x2q",
				Identity: "cluster.local/ns/store/sa/batch"}),
			ztunnel(flow.Endpoint{Address: "203.0.113.7"}),
		}},
	}
}

// TestPromotedEvidenceCountsEachEdgeOnce: for each data plane's flow shape,
// a proposal's two observed edges stay two after its promotion: the policy's
// status counts the same flows, replayed, on the entries that it carried on
// from the proposal, under the one key of an edge that both writers use,
// rather than listing each edge again under another.
func TestPromotedEvidenceCountsEachEdgeOnce(t *testing.T) {
	controlplanetest.Require(t)
	for _, shape := range evidenceShapes() {
		t.Run(shape.name, func(t *testing.T) {
			fresh(t)
			ctx := context.Background()
			p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{
				Violations: new(consumertest.LogsSink), StatusSyncInterval: time.Second, ObservedInterval: time.Second})}
			waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
			replay := func(n int) {
				ld := plog.NewLogs()
				sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
				for range n {
					for i := range shape.records {
						shape.records[i].AppendTo(sl)
					}
				}
				must(t, p.Processor.ConsumeLogs(ctx, ld))
			}
			replay(3)
			var proposal v1alpha1.WorkloadNetworkPolicyProposal
			waitUntil(t, "the proposal with both edges, 3 flows each", time.Minute, func() bool {
				var list v1alpha1.WorkloadNetworkPolicyProposalList
				must(t, env.Client.List(ctx, &list, client.InNamespace(shape.namespace)))
				for _, got := range list.Items {
					if got.Spec.TargetRef.Name == shape.workload && got.Spec.Direction == shape.direction {
						proposal = got
						return flowsOf(got.Status.Observed) == "3 3" && got.Status.WouldBlockEdges == 1
					}
				}
				return false
			})
			policy := promoteCarrying(t, &proposal, 2)
			waitUntil(t, "the proposal to go", 30*time.Second, func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, key(proposal.Namespace, proposal.Name), &v1alpha1.WorkloadNetworkPolicyProposal{}))
			})

			replay(2)
			waitUntil(t, "the policy to count the replay on its two edges", 30*time.Second, func() bool {
				must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
				return flowsOf(policy.Status.Observed) == "5 5"
			})
			st := policy.Status
			if st.ObservedEdges != 2 || st.WouldBlockEdges != 1 || len(st.Observed) != 2 {
				t.Fatalf("observedEdges %d, wouldBlockEdges %d, %d entries; want 2, 1, 2: %+v",
					st.ObservedEdges, st.WouldBlockEdges, len(st.Observed), st.Observed)
			}
		})
	}
}

// flowsOf is the flows of each observed edge, in order, as "n n ...".
func flowsOf(edges []v1alpha1.ObservedEdge) string {
	var out []string
	for _, e := range edges {
		out = append(out, strconv.FormatInt(e.Flows, 10))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// promoteCarrying promotes proposal in monitor mode and waits for its policy
// to carry on its n observed edges; both go at the test's end.
func promoteCarrying(t *testing.T, proposal *v1alpha1.WorkloadNetworkPolicyProposal, n int32) *v1alpha1.WorkloadNetworkPolicy {
	t.Helper()
	policy := &v1alpha1.WorkloadNetworkPolicy{}
	policy.Namespace, policy.Name = proposal.Namespace, proposal.Name
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), policy)
		_ = env.Client.Delete(context.Background(), proposal)
	})
	promote(t, proposal, v1alpha1.PolicyModeMonitor)
	waitUntil(t, "the policy with the proposal's observed edges", time.Minute, func() bool {
		return env.Client.Get(context.Background(), key(policy.Namespace, policy.Name), policy) == nil && policy.Status.ObservedEdges == n
	})
	return policy
}
