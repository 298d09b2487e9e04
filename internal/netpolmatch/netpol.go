// Package netpolmatch decides, in software, whether a policy spec allows a flow:
// a NetworkPolicy spec as the CNI would, and the L4 part of an Istio
// AuthorizationPolicy as ztunnel would. The violation processor judges
// monitor-mode violations with it, and the proposal writer the verdicts of a
// proposal's observed edges: one code path for both.
package netpolmatch

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Peer is the other end of a flow, as a NetworkPolicy rule matches it.
type Peer struct {
	// Address is the peer's IP address, or an address block (CIDR) that stands
	// for it, which ipBlock rules match: a block matches only when the rule's
	// block holds all of it.
	Address string
	// Namespace is empty when the peer is not a pod of the cluster; then only
	// ipBlock rules can match it.
	Namespace string
	// PodLabels and NamespaceLabels are what the rule's selectors match; nil
	// when not known, which only an empty selector matches.
	PodLabels, NamespaceLabels map[string]string
	// Principal is the peer's Istio identity, without spiffe://, which Istio
	// rules match; empty for a peer without one.
	Principal string
	// Class is what the peer is, for one beyond the workloads (the API
	// server, a node, the world): what spec.outside's entities and the data
	// plane's own rules tell apart (dataplane.go).
	Class v1alpha1.PeerClass
	// DNSNames are the peer's DNS names, where the data plane gives some,
	// which spec.outside's names match.
	DNSNames []string
}

// Allows reports whether a NetworkPolicy spec, in policyNamespace, allows a flow
// in direction d with peer on protocol and port, as the CNI would decide it
// from this policy alone. A named port cannot be resolved without the target's
// containers, so a rule with one is taken to allow: a monitor-mode policy
// never reports a violation that it cannot prove.
func Allows(spec *networkingv1.NetworkPolicySpec, policyNamespace string, d v1alpha1.Direction,
	p *Peer, protocol corev1.Protocol, port int32, sc SelectorCache) bool {
	_, ok := Match(spec, policyNamespace, d, p, protocol, port, sc)
	return ok
}

// Match is Allows that also says which rule of direction d allowed the flow:
// the index of the first one that does, or -1 when the spec does not govern
// the direction (it allows everything without a rule) or allows nothing.
func Match(spec *networkingv1.NetworkPolicySpec, policyNamespace string, d v1alpha1.Direction,
	p *Peer, protocol corev1.Protocol, port int32, sc SelectorCache) (rule int, allowed bool) {
	if spec == nil || !restricts(spec, d) {
		return -1, true
	}
	if d == v1alpha1.DirectionIngress {
		for i := range spec.Ingress {
			r := &spec.Ingress[i]
			if peersMatch(r.From, policyNamespace, p, sc) && portsMatch(r.Ports, protocol, port) {
				return i, true
			}
		}
		return -1, false
	}
	for i := range spec.Egress {
		r := &spec.Egress[i]
		if peersMatch(r.To, policyNamespace, p, sc) && portsMatch(r.Ports, protocol, port) {
			return i, true
		}
	}
	return -1, false
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
func peersMatch(peers []networkingv1.NetworkPolicyPeer, policyNamespace string, p *Peer, sc SelectorCache) bool {
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

func peerMatches(np *networkingv1.NetworkPolicyPeer, policyNamespace string, p *Peer, sc SelectorCache) bool {
	if np.IPBlock != nil {
		return ipBlockMatches(np.IPBlock, p.Address)
	}
	if p.Namespace == "" {
		return false
	}
	if np.NamespaceSelector == nil {
		// A podSelector alone selects pods of the policy's own namespace.
		return p.Namespace == policyNamespace && sc.selects(np.PodSelector, p.PodLabels)
	}
	return sc.selects(np.NamespaceSelector, p.NamespaceLabels) &&
		(np.PodSelector == nil || sc.selects(np.PodSelector, p.PodLabels))
}

// SelectorCache keeps the selectors of one batch converted: converting a label
// selector validates every key and value, which would otherwise be most of the
// cost of judging a flow. A nil cache converts every time. Keys are the cached
// policies' own selectors, which do not change while a batch is judged.
type SelectorCache map[*metav1.LabelSelector]labels.Selector

// selects applies a label selector; an invalid one selects nothing, as the API
// server would not have admitted it.
func (sc SelectorCache) selects(sel *metav1.LabelSelector, l map[string]string) bool {
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

// ipBlockMatches reports whether the block holds address, an address or an
// address block, all of it: a block that an except entry overlaps does not match.
func ipBlockMatches(b *networkingv1.IPBlock, address string) bool {
	p, ok := prefixOf(address)
	if !ok {
		return false
	}
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !contains(cidr, p) {
		return false
	}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Overlaps(p) {
			return false
		}
	}
	return true
}

// prefixOf reads an address (as a single-address block) or a block.
func prefixOf(s string) (netip.Prefix, bool) {
	if addr, err := netip.ParseAddr(s); err == nil {
		addr = addr.Unmap().WithZone("")
		return netip.PrefixFrom(addr, addr.BitLen()), true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// contains reports whether outer holds all of inner.
func contains(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
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
			return true // a named port: see Allows
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
