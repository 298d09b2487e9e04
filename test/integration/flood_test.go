package integration

import (
	"context"
	"encoding/json"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// floodPeers is how many distinct outside addresses a flood sends from.
const floodPeers = 200_000

// sendFlood sends one flow from store/batch to port 8080 of each of n
// distinct outside addresses, the first at index from, in batches.
func sendFlood(t *testing.T, p *pipeline, from, n int) {
	t.Helper()
	rec := flow.Record{Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1, Source: batchPod}
	for start := from; start < from+n; start += 10_000 {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		rec.Time = time.Now()
		for i := start; i < min(start+10_000, from+n); i++ {
			a := netip.AddrFrom4([4]byte{100, byte(64 + i>>16), byte(i >> 8), byte(i)})
			rec.Destination = flow.Endpoint{Address: a.String(), Port: 8080, External: flow.ExternalWorld}
			rec.AppendTo(sl)
		}
		must(t, p.Processor.ConsumeLogs(context.Background(), ld))
	}
}

// near reports whether got is within three standard errors of want.
func near(got int32, want int) bool {
	return math.Abs(float64(int(got)-want)) <= 3*observed.StandardError*float64(want)
}

// estimated checks the evidence of an object past its tracking limit:
// counts that are estimates near the truth, and the conditions that say so.
func estimated(t *testing.T, what string, tr *v1alpha1.ObservedTraffic, conds []metav1.Condition, seen, blocked int) {
	t.Helper()
	if !tr.Estimated || !near(tr.ObservedEdges, seen) || !near(tr.WouldBlockEdges, blocked) || tr.Estimators == nil {
		t.Fatalf("%s: estimated %v, %d observed (want about %d), %d would block (want about %d)",
			what, tr.Estimated, tr.ObservedEdges, seen, tr.WouldBlockEdges, blocked)
	}
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionEvidenceComplete)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonTrackingLimit {
		t.Fatalf("%s: EvidenceComplete %+v", what, c)
	}
	w := meta.FindStatusCondition(conds, v1alpha1.ConditionWouldBlock)
	if w == nil || !strings.HasPrefix(w.Message, "protect would block about ") || !strings.HasSuffix(w.Message, "; tracking limit 1,024 reached") {
		t.Fatalf("%s: WouldBlock %+v", what, w)
	}
	t.Logf("%s: %d observed, %d would block; %q", what, tr.ObservedEdges, tr.WouldBlockEdges, w.Message)
}

// TestEvidenceUnderAFlood: store/batch calls 200,000 distinct outside
// addresses, with outside_peers drop and ip_blocks. The proposal's counts
// are estimates near the truth and say so; a new leader keeps them; the
// promoted policy carries them on and counts a second flood, in monitor and
// then in protect with a rule that allows the flood, whose use counts every
// flow.
func TestEvidenceUnderAFlood(t *testing.T) {
	controlplanetest.Require(t)
	for _, tc := range []struct {
		outside learningprocessor.OutsidePeers
		// learned is about how many flood peers the proposal allows: with
		// ip_blocks, max_peers (64), web/frontend among them or not.
		learned int
	}{{learningprocessor.OutsidePeersDrop, 0}, {learningprocessor.OutsidePeersIPBlocks, 63}} {
		t.Run(string(tc.outside), func(t *testing.T) {
			fresh(t)
			ctx := context.Background()
			opts := pipelinetest.Options{OutsidePeers: tc.outside, ObservedInterval: time.Second,
				Violations: consumertest.NewNop(), StatusSyncInterval: time.Second}
			p := &pipeline{Learning: pipelinetest.StartPipeline(t, opts)}
			waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
			// Each flood is followed by a flow of the batch's edges: a status
			// that counts it counts the whole flood.
			sendBatch(t, p, 1)
			sendFlood(t, p, 0, floodPeers)
			sendBatch(t, p, 1)

			var proposal v1alpha1.WorkloadNetworkPolicyProposal
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &proposal) })
			waitUntil(t, "the proposal's count of the flood", time.Minute, func() bool {
				got, ok := batchEgressProposal(t)
				proposal = got
				return ok && edgeFlows(&got, "web", "") == 2
			})
			estimated(t, "proposal", &proposal.Status.ObservedTraffic, proposal.Status.Conditions, floodPeers+2, floodPeers+1-tc.learned)
			size, err := json.Marshal(proposal.Status.Estimators)
			must(t, err)
			t.Logf("the proposal's estimators: %d bytes of JSON", len(size))

			// A new leader: it reads the status and counts on from it.
			p.Stop(t)
			p = &pipeline{Learning: pipelinetest.StartPipeline(t, opts)}
			waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
			sendBatch(t, p, 1)
			waitUntil(t, "the new leader's write", time.Minute, func() bool {
				got, ok := batchEgressProposal(t)
				proposal = got
				return ok && edgeFlows(&got, "web", "") == 3
			})
			estimated(t, "proposal, new leader", &proposal.Status.ObservedTraffic, proposal.Status.Conditions, floodPeers+2, floodPeers+1-tc.learned)

			// Promoted to monitor: the policy carries the counts on, and
			// counts a second flood.
			policy := &v1alpha1.WorkloadNetworkPolicy{}
			policy.Namespace, policy.Name = proposal.Namespace, proposal.Name
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), policy) })
			promote(t, &proposal, v1alpha1.PolicyModeMonitor)
			waitUntil(t, "the policy with the proposal's counts", time.Minute, func() bool {
				return env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy) == nil && policy.Status.Estimated
			})
			sendFlood(t, p, floodPeers, floodPeers)
			sendBatch(t, p, 1)
			waitUntil(t, "the policy's count of the second flood", time.Minute, func() bool {
				must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
				got := policyEdge(policy, "web", "")
				return got != nil && got.Flows == 4
			})
			estimated(t, "monitor policy", &policy.Status.ObservedTraffic, policy.Status.Conditions, 2*floodPeers+2, 2*floodPeers+1-tc.learned)

			// Protect, with a rule that allows the flood's addresses: a third
			// flood is allowed, its edges past the limit too, and the rule's
			// use counts every one of its flows.
			var rule string
			controlplanetest.Edit(t, env.Client, policy, func(policy *v1alpha1.WorkloadNetworkPolicy) {
				policy.Spec.Mode = v1alpha1.PolicyModeProtect
				tcp := corev1.ProtocolTCP
				policy.Spec.Kubernetes.Egress = append(policy.Spec.Kubernetes.Egress, networkingv1.NetworkPolicyEgressRule{
					To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "100.64.0.0/10"}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(8080))}},
				})
				rule = "egress[" + strconv.Itoa(len(policy.Spec.Kubernetes.Egress)-1) + "]"
			})
			waitUntil(t, "the rule in the policy's rule use", time.Minute, func() bool {
				must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
				return ruleFlows(policy, rule) >= 0
			})
			sendFlood(t, p, 2*floodPeers, floodPeers)
			sendBatch(t, p, 1)
			waitUntil(t, "the policy's count of the third flood", time.Minute, func() bool {
				must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
				got := policyEdge(policy, "web", "")
				return got != nil && got.Flows == 5
			})
			// Every flow of the third flood counts for the rule, exactly once.
			if !testwait.Try(t, "the rule's count of the third flood", time.Minute, func() bool {
				must(t, env.Client.Get(ctx, key(policy.Namespace, policy.Name), policy))
				return ruleFlows(policy, rule) == floodPeers
			}) {
				t.Fatalf("the rule %s counts %d flows of the third flood, want %d", rule, ruleFlows(policy, rule), floodPeers)
			}
			if !policy.Status.Estimated || !near(policy.Status.ObservedEdges, 3*floodPeers+2) {
				t.Fatalf("protect policy: estimated %v, %d observed", policy.Status.Estimated, policy.Status.ObservedEdges)
			}
			// The third flood is allowed: what would be blocked is what the
			// earlier floods were, as judged when they were seen.
			if !near(policy.Status.WouldBlockEdges, 2*floodPeers+1-tc.learned) {
				t.Fatalf("protect policy: %d would block, want about %d", policy.Status.WouldBlockEdges, 2*floodPeers+1-tc.learned)
			}
			t.Logf("protect policy: %d observed, %d would block, rule %s used by %d flows",
				policy.Status.ObservedEdges, policy.Status.WouldBlockEdges, rule, ruleFlows(policy, rule))
		})
	}
}

// ruleFlows is the flows that the policy's status counts for rule, -1 when
// it does not list the rule.
func ruleFlows(p *v1alpha1.WorkloadNetworkPolicy, rule string) int64 {
	for _, r := range p.Status.RuleUse {
		if r.Rule == rule {
			return r.Flows
		}
	}
	return -1
}
