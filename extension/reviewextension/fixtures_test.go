package reviewextension

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// fixtures are the objects that the tests show: a learning namespace (shop)
// with proposals and a monitored policy with a violation and an unused rule,
// and a protected namespace (pay).
type fixtures struct {
	proposals []v1alpha1.WorkloadNetworkPolicyProposal
	policies  []v1alpha1.WorkloadNetworkPolicy
}

func kubernetesSpec(kind v1alpha1.WorkloadKind, name string, d v1alpha1.Direction, rules int) v1alpha1.PolicySpec {
	np := &networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}
	port := func(p int32) []networkingv1.NetworkPolicyPort {
		tcp := corev1.ProtocolTCP
		return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptrPort(p)}}
	}
	for i := range rules {
		peer := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rule": strconv.Itoa(i)}}}}
		if d == v1alpha1.DirectionIngress {
			np.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			np.Ingress = append(np.Ingress, networkingv1.NetworkPolicyIngressRule{From: peer, Ports: port(8080 + int32(i))})
		} else {
			np.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			np.Egress = append(np.Egress, networkingv1.NetworkPolicyEgressRule{To: peer, Ports: port(8080 + int32(i))})
		}
	}
	return v1alpha1.PolicySpec{Backend: v1alpha1.BackendKubernetes, TargetRef: v1alpha1.TargetRef{Kind: kind, Name: name}, Direction: d, Kubernetes: np}
}

func edge(peer v1alpha1.ObservedPeer, port int32, flows int64, verdict v1alpha1.ObservedVerdict, seen time.Time) v1alpha1.ObservedEdge {
	t := metav1.NewTime(seen.Truncate(time.Second))
	return v1alpha1.ObservedEdge{Peer: peer, Protocol: corev1.ProtocolTCP, Port: port, Flows: flows, FirstSeen: t, LastSeen: t, Verdict: verdict}
}

func workloadPeer(ns, kind, name string) v1alpha1.ObservedPeer {
	return v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassWorkload, Namespace: ns, Kind: kind, Name: name}
}

func traffic(edges ...v1alpha1.ObservedEdge) v1alpha1.ObservedTraffic {
	t := v1alpha1.ObservedTraffic{Observed: edges, ObservedEdges: int32(len(edges))}
	for _, e := range edges {
		if e.Verdict == v1alpha1.VerdictWouldBlock {
			t.WouldBlockEdges++
		}
	}
	return t
}

// estimate is t past the tracking limit: counts that are estimates.
func estimate(t v1alpha1.ObservedTraffic, observed, wouldBlock int32) v1alpha1.ObservedTraffic {
	t.ObservedEdges, t.WouldBlockEdges, t.Estimated = observed, wouldBlock, true
	t.OmittedEdges = observed - int32(len(t.Observed))
	return t
}

func newFixtures(now time.Time) fixtures {
	allowed, block := v1alpha1.VerdictAllowed, v1alpha1.VerdictWouldBlock
	ts := metav1.NewTime(now.Truncate(time.Second))
	proposal := func(ns, name string, spec v1alpha1.PolicySpec, t v1alpha1.ObservedTraffic) v1alpha1.WorkloadNetworkPolicyProposal {
		return v1alpha1.WorkloadNetworkPolicyProposal{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec,
			Status: v1alpha1.WorkloadNetworkPolicyProposalStatus{ObservedTraffic: t}}
	}
	var f fixtures
	f.proposals = []v1alpha1.WorkloadNetworkPolicyProposal{
		proposal("shop", "deployment-web-ingress", kubernetesSpec(v1alpha1.WorkloadKindDeployment, "web", v1alpha1.DirectionIngress, 1), traffic(
			edge(workloadPeer("shop", "Deployment", "frontend"), 8080, 120, allowed, now),
			edge(v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassExternal, Address: "203.0.113.7/32"}, 8080, 3, block, now),
		)),
		proposal("shop", "deployment-web-egress", kubernetesSpec(v1alpha1.WorkloadKindDeployment, "web", v1alpha1.DirectionEgress, 2), estimate(traffic(
			edge(v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassAPIServer, Address: "10.0.0.1/32"}, 443, 9, allowed, now),
			edge(workloadPeer("shop", "StatefulSet", "db"), 5432, 40, allowed, now),
		), 193806, 0)),
	}
	// web's ingress is not ready (not covered: a node lost events); its
	// egress is.
	f.proposals[0].Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: ts,
		Reason: v1alpha1.ReasonNotCovered, Message: "Coverage is False (LostEvents: the data plane lost 17 events on node worker-2)"}}
	f.proposals[0].Status.CoverageGaps = []v1alpha1.CoverageGap{{Cause: v1alpha1.CoverageLostEvents, Reports: 1, Events: 17,
		First: ts, Last: ts, Nodes: []string{"worker-2"}}}
	f.proposals[1].Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: ts,
		Reason: v1alpha1.ReasonReadyToPromote, Message: "stable, covered"}}
	db := v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "statefulset-db-ingress"},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeMonitor,
			PolicySpec: kubernetesSpec(v1alpha1.WorkloadKindStatefulSet, "db", v1alpha1.DirectionIngress, 2)},
		Status: v1alpha1.WorkloadNetworkPolicyStatus{
			ObservedTraffic: traffic(
				edge(workloadPeer("shop", "Deployment", "web"), 5432, 40, allowed, now),
				edge(workloadPeer("shop", "Deployment", "batch"), 5432, 2, block, now),
			),
			ViolationCount: 2, ActiveViolationCount: 1, LastViolationID: 2,
			Violations: []v1alpha1.ViolationRecord{{
				ID: "2", Timestamp: ts, Protocol: corev1.ProtocolTCP, DstPort: 5432, Action: v1alpha1.PolicyModeMonitor,
				Source:      v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "Deployment", Name: "batch"},
				Destination: v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "StatefulSet", Name: "db"},
			}},
			AcknowledgedViolations: []v1alpha1.AcknowledgedViolation{{
				Reason: "a one-off backfill", AcknowledgedAt: ts,
				Violation: v1alpha1.ViolationRecord{ID: "1", Timestamp: ts, Protocol: corev1.ProtocolTCP, DstPort: 5432, Action: v1alpha1.PolicyModeMonitor,
					Source:      v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "CronJob", Name: "backfill"},
					Destination: v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "StatefulSet", Name: "db"}},
			}},
			RuleUse: []v1alpha1.RuleUse{{Rule: "ingress[0]", Flows: 40, LastUsed: &ts}, {Rule: "ingress[1]"}},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionUnusedRules, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRulesUnused,
				Message: "1 rule not used in the last 7 days: ingress[1] (never used)", LastTransitionTime: ts}},
		},
	}
	api := v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pay", Name: "deployment-api-ingress"},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeProtect,
			PolicySpec: kubernetesSpec(v1alpha1.WorkloadKindDeployment, "api", v1alpha1.DirectionIngress, 1)},
		Status: v1alpha1.WorkloadNetworkPolicyStatus{ObservedTraffic: traffic(
			edge(workloadPeer("shop", "Deployment", "web"), 8443, 77, allowed, now),
			edge(v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassHost, Address: "192.168.1.10/32"}, 8443, 5, allowed, now),
		)},
	}
	// The nodes' calls, which the policy allows beside its rule.
	api.Spec.Outside = []v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityNodes,
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8443))}}}}
	f.policies = []v1alpha1.WorkloadNetworkPolicy{db, api}
	return f
}

func ptrPort(p int32) *intstr.IntOrString { v := intstr.FromInt32(p); return &v }
