package render

import (
	"errors"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// networkPolicies renders the kubernetes backend: in protect mode a NetworkPolicy
// with spec.kubernetes as its spec, and a rule of address blocks for each entity
// of spec.outside (outside_addresses.go), which the CNI enforces; in monitor
// mode none, because a NetworkPolicy has no dry run: the flows are judged
// against the spec in software instead. A mode change creates or deletes it. A
// DNS name of spec.outside has no NetworkPolicy form (netpolmatch.Rendered).
type networkPolicies struct {
	// outside is what entities are rendered as; nil for a policy without.
	outside *outsideAddresses
}

var _ nativeKind[*networkingv1.NetworkPolicy] = networkPolicies{}

func (networkPolicies) kind() string { return "NetworkPolicy" }

func (networkPolicies) empty() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }

func (networkPolicies) outcome(p *v1alpha1.WorkloadNetworkPolicy) (bool, string, string) {
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		return false, v1alpha1.ReasonMonitor, "monitor mode: no NetworkPolicy; flows are judged against spec.kubernetes"
	}
	return true, v1alpha1.ReasonProtect, "protect mode: the NetworkPolicy is rendered"
}

func (n networkPolicies) desired(p *v1alpha1.WorkloadNetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	if p.Spec.Kubernetes == nil {
		// The CRD's validation refuses this; an error here rather than a
		// panic on the leader if such a policy gets in all the same.
		return nil, errors.New("backend kubernetes without spec.kubernetes")
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		Spec:       *p.Spec.Kubernetes.DeepCopy(),
	}
	if n.outside == nil {
		return np, nil
	}
	for i := range p.Spec.Outside {
		blocks, ports := n.outside.entityRule(&p.Spec.Outside[i], p.Spec.Direction)
		if len(blocks) == 0 {
			continue
		}
		var peers []networkingv1.NetworkPolicyPeer
		for _, b := range blocks {
			peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: b}})
		}
		ports = slices.Clone(ports)
		if p.Spec.Direction == v1alpha1.DirectionEgress {
			np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports})
		} else {
			np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers, Ports: ports})
		}
	}
	return np, nil
}

func (networkPolicies) sync(have, want *networkingv1.NetworkPolicy) bool {
	if apiequality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return false
	}
	have.Spec = want.Spec
	return true
}

func (networkPolicies) encode(np *networkingv1.NetworkPolicy) (client.Object, error) { return np, nil }
