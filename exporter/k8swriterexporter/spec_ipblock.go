package k8swriterexporter

import (
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// ipBlockKey is the key of a rule whose peer is an address block; no
// principal or namespace starts with it.
func ipBlockKey(cidr string) string { return "ipBlock|" + cidr }

// canonicalCIDR is cidr in its one form (masked, without a zone), or "" when
// it is not a prefix.
func canonicalCIDR(cidr string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	return p.Masked().String()
}

// ipBlockRule is the rule for a learned address block, with a copy of its
// ports; the learning processor has checked that the block is not a pod's.
func ipBlockRule(cidr string, ports map[portRef]struct{}) *rule {
	if c := canonicalCIDR(cidr); c != "" {
		cidr = c
	}
	return &rule{cidr: cidr, ports: clonePorts(ports)}
}

// ipBlockRuleOf reads a NetworkPolicy peer that is an ipBlock the writer could
// have written (no except), or returns nil.
func ipBlockRuleOf(peer networkingv1.NetworkPolicyPeer, ports map[portRef]struct{}) *rule {
	if peer.IPBlock == nil || len(peer.IPBlock.Except) > 0 || peer.NamespaceSelector != nil || peer.PodSelector != nil {
		return nil
	}
	c := canonicalCIDR(peer.IPBlock.CIDR)
	if c == "" {
		return nil
	}
	return &rule{cidr: c, ports: clonePorts(ports)}
}

// ipBlockPeers are the NetworkPolicy peers of an address block rule: from[] of
// an ingress rule, to[] of an egress rule.
func ipBlockPeers(r *rule) []networkingv1.NetworkPolicyPeer {
	return []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: r.cidr}}}
}

// istioSource is the source of an Istio rule: its principal, or its address
// block (a source without an identity).
func istioSource(r *rule) v1alpha1.IstioSource {
	if r.cidr != "" {
		return v1alpha1.IstioSource{IPBlocks: []string{r.cidr}}
	}
	return v1alpha1.IstioSource{Principals: []string{r.principal}}
}
