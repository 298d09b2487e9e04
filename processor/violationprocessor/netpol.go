package violationprocessor

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// peer is the other end of a flow, as a NetworkPolicy rule matches it.
type peer struct {
	// address is the peer's IP address, which ipBlock rules match.
	address string
	// namespace is empty when the peer is not a pod of the cluster; then only
	// ipBlock rules can match it.
	namespace string
	// podLabels and namespaceLabels are what the rule's selectors match; nil
	// when not known, which only an empty selector matches.
	podLabels, namespaceLabels map[string]string
}

// allows reports whether a NetworkPolicy spec, in policyNamespace, allows a flow
// in direction d with peer on protocol and port, as the CNI would decide it
// from this policy alone. A named port cannot be resolved without the target's
// containers, so a rule with one is taken to allow: a monitor-mode policy
// never reports a violation that it cannot prove.
func allows(spec *networkingv1.NetworkPolicySpec, policyNamespace string, d v1alpha1.Direction,
	p *peer, protocol corev1.Protocol, port int32, sc selectorCache) bool {
	if spec == nil || !restricts(spec, d) {
		return true
	}
	if d == v1alpha1.DirectionIngress {
		for i := range spec.Ingress {
			r := &spec.Ingress[i]
			if peersMatch(r.From, policyNamespace, p, sc) && portsMatch(r.Ports, protocol, port) {
				return true
			}
		}
		return false
	}
	for i := range spec.Egress {
		r := &spec.Egress[i]
		if peersMatch(r.To, policyNamespace, p, sc) && portsMatch(r.Ports, protocol, port) {
			return true
		}
	}
	return false
}

// restricts reports whether the spec governs direction d: as the API server
// defaults policyTypes, Ingress always, Egress when there are egress rules.
func restricts(spec *networkingv1.NetworkPolicySpec, d v1alpha1.Direction) bool {
	if len(spec.PolicyTypes) == 0 {
		return d == v1alpha1.DirectionIngress || len(spec.Egress) > 0
	}
	for _, t := range spec.PolicyTypes {
		if string(t) == string(d) {
			return true
		}
	}
	return false
}

// peersMatch: an empty list matches every peer; else one peer must match.
func peersMatch(peers []networkingv1.NetworkPolicyPeer, policyNamespace string, p *peer, sc selectorCache) bool {
	if len(peers) == 0 {
		return true
	}
	for i := range peers {
		if peerMatches(&peers[i], policyNamespace, p, sc) {
			return true
		}
	}
	return false
}

func peerMatches(np *networkingv1.NetworkPolicyPeer, policyNamespace string, p *peer, sc selectorCache) bool {
	if np.IPBlock != nil {
		return ipBlockMatches(np.IPBlock, p.address)
	}
	if p.namespace == "" {
		return false
	}
	if np.NamespaceSelector == nil {
		// A podSelector alone selects pods of the policy's own namespace.
		return p.namespace == policyNamespace && sc.selects(np.PodSelector, p.podLabels)
	}
	return sc.selects(np.NamespaceSelector, p.namespaceLabels) &&
		(np.PodSelector == nil || sc.selects(np.PodSelector, p.podLabels))
}

// selectorCache keeps the selectors of one batch converted: converting a label
// selector validates every key and value, which would otherwise be most of the
// cost of judging a flow. A nil cache converts every time. Keys are the cached
// policies' own selectors, which do not change while a batch is judged.
type selectorCache map[*metav1.LabelSelector]labels.Selector

// selects applies a label selector; an invalid one selects nothing, as the API
// server would not have admitted it.
func (sc selectorCache) selects(sel *metav1.LabelSelector, l map[string]string) bool {
	if sel == nil {
		return true
	}
	s, ok := sc[sel]
	if !ok {
		var err error
		if s, err = metav1.LabelSelectorAsSelector(sel); err != nil {
			s = labels.Nothing()
		}
		if sc != nil {
			sc[sel] = s
		}
	}
	return s.Matches(labels.Set(l))
}

func ipBlockMatches(b *networkingv1.IPBlock, address string) bool {
	addr, err := netip.ParseAddr(address)
	if err != nil {
		return false
	}
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !cidr.Contains(addr) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Contains(addr) {
			return false
		}
	}
	return true
}

// portsMatch: an empty list matches every port; else one entry must match the
// protocol (TCP when unset) and the port, or the range up to endPort.
func portsMatch(ports []networkingv1.NetworkPolicyPort, protocol corev1.Protocol, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for i := range ports {
		pp := &ports[i]
		proto := corev1.ProtocolTCP
		if pp.Protocol != nil {
			proto = *pp.Protocol
		}
		if proto != protocol {
			continue
		}
		switch {
		case pp.Port == nil:
			return true
		case pp.Port.Type == intstr.String:
			return true // a named port: see allows
		case pp.EndPort != nil:
			if port >= pp.Port.IntVal && port <= *pp.EndPort {
				return true
			}
		case pp.Port.IntVal == port:
			return true
		}
	}
	return false
}
