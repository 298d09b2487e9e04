package k8swriterexporter

import (
	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// A peer beyond the cluster's workloads that learning names by what it is
// (outside_peers entities) is a rule of its own, written to spec.outside in
// the same form on every backend; each backend renders it in its data plane's
// terms (docs/architecture.md).

// outsideKey is the key of a rule whose peer is an entity or a DNS name; no
// principal, namespace or address block key starts like it. Entities sort
// before names.
func outsideKey(entity v1alpha1.Entity, dnsName string) string {
	if entity != "" {
		return "outside|1|" + string(entity)
	}
	return "outside|2|" + dnsName
}

// outside reports whether the rule is a peer of spec.outside.
func (r *rule) outside() bool { return r.entity != "" || r.dnsName != "" }

// outsideRule is the rule for a learned entity or DNS name, with a copy of
// its ports.
func outsideRule(entity v1alpha1.Entity, dnsName string, ports map[portRef]struct{}) *rule {
	return &rule{entity: entity, dnsName: dnsName, ports: clonePorts(ports)}
}

// outsideRuleOf reads a peer of spec.outside; without ports it allows every
// port, which merging what is learned into it keeps.
func outsideRuleOf(o v1alpha1.OutsidePeer) *rule {
	ports, spans := portsOf(o.Ports)
	r := &rule{entity: o.Entity, dnsName: o.DNSName, ports: ports, anyPort: len(o.Ports) == 0}
	for proto, span := range spans {
		r.addSpan(proto, span)
	}
	return r
}

// outsidePeer is the rule as a peer of spec.outside.
func (r *rule) outsidePeer() v1alpha1.OutsidePeer {
	o := v1alpha1.OutsidePeer{Entity: r.entity, DNSName: r.dnsName}
	if !r.anyPort {
		o.Ports = networkPolicyPorts(r)
	}
	return o
}
