package k8swriterexporter

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// namespaceLabel is the label the API server sets on every namespace to its name.
const namespaceLabel = "kubernetes.io/metadata.name"

// rule is one peer of a proposal with its ports: a namespace and pod selector
// (kubernetes backend) or a principal (istio backend).
type rule struct {
	namespace string
	selector  *metav1.LabelSelector
	principal string
	cidr      string // an ipBlock peer (spec_ipblock.go)
	// entity and dnsName are a peer of spec.outside (spec_outside.go).
	entity  v1alpha1.Entity
	dnsName string
	ports   map[portRef]struct{}
	// spans are the port ranges of a collapsed kubernetes rule, by protocol;
	// ports is then empty.
	spans map[string]portSpan
	// anyPort is a collapsed istio rule: it allows every port of its principal.
	anyPort bool
}

// portSpan is a range of ports, lo to hi inclusive.
type portSpan struct{ lo, hi uint32 }

func (s portSpan) with(port uint32) portSpan {
	return portSpan{lo: min(s.lo, port), hi: max(s.hi, port)}
}

func (r *rule) addSpan(protocol string, s portSpan) {
	if r.spans == nil {
		r.spans = map[string]portSpan{}
	}
	if have, ok := r.spans[protocol]; ok {
		s = have.with(s.lo).with(s.hi)
	}
	r.spans[protocol] = s
}

// collapsed reports whether the rule's ports are a range or any port.
func (r *rule) collapsed() bool { return r.anyPort || len(r.spans) > 0 }

// bound collapses the rule's ports when it has more than maxPorts, or was
// collapsed already: the kubernetes backend keeps one range per protocol,
// from the lowest port to the highest; istio, which has no ranges, any port.
func (r *rule) bound(backend v1alpha1.Backend, maxPorts int) {
	if !r.collapsed() && len(r.ports) <= maxPorts {
		return
	}
	if backend == v1alpha1.BackendIstio {
		r.anyPort, r.ports, r.spans = true, map[portRef]struct{}{}, nil
		return
	}
	for p := range r.ports {
		r.addSpan(p.protocol, portSpan{lo: p.port, hi: p.port})
	}
	r.ports = map[portRef]struct{}{}
}

func (r *rule) key() string {
	if r.cidr != "" {
		return ipBlockKey(r.cidr)
	}
	if r.outside() {
		return outsideKey(r.entity, r.dnsName)
	}
	if r.principal != "" {
		return r.principal
	}
	return r.namespace + "|" + metav1.FormatLabelSelector(r.selector)
}

// rules is a proposal's content as a set, so that what a proposal holds and what
// was learned merge by union and compare regardless of order.
type rules map[string]*rule

func (rs rules) add(r *rule) {
	have, ok := rs[r.key()]
	if !ok {
		rs[r.key()] = r
		return
	}
	for p := range r.ports {
		have.ports[p] = struct{}{}
	}
	for proto, span := range r.spans {
		have.addSpan(proto, span)
	}
	have.anyPort = have.anyPort || r.anyPort
}

// bounds is what bounded did to a proposal.
type bounds struct {
	// collapsed counts the rules whose ports are a range or any port;
	// leftOut, the learned peers that max_peers kept out.
	collapsed, leftOut int
}

// bounded merges learned into held (what the proposal holds) within the
// limits: held's peers all stay, learned peers that are new join in canonical
// order while there are fewer than maxPeers, and every rule whose ports are
// over maxPorts is collapsed. Given the same held and learned, the result is
// the same.
func bounded(backend v1alpha1.Backend, held, learned rules, maxPeers, maxPorts int) (rules, bounds) {
	var b bounds
	for _, k := range slices.Sorted(maps.Keys(learned)) {
		if _, ok := held[k]; ok || len(held) < maxPeers {
			held.add(learned[k])
		} else {
			b.leftOut++
		}
	}
	for _, r := range held {
		r.bound(backend, maxPorts)
		if r.collapsed() {
			b.collapsed++
		}
	}
	return held, b
}

// rulesOf reads the rules of a proposal's spec.
func rulesOf(spec *v1alpha1.PolicySpec) rules {
	rs := rules{}
	if spec.Istio != nil {
		for _, ir := range spec.Istio.Rules {
			ports := map[portRef]struct{}{}
			anyPort := len(ir.To) == 0
			for _, to := range ir.To {
				for _, p := range to.Operation.Ports {
					if n, err := strconv.ParseUint(p, 10, 16); err == nil {
						ports[portRef{protocol: "tcp", port: uint32(n)}] = struct{}{}
					}
				}
			}
			for _, from := range ir.From {
				for _, principal := range from.Source.Principals {
					rs.add(&rule{principal: principal, ports: clonePorts(ports), anyPort: anyPort})
				}
				for _, cidr := range from.Source.IPBlocks {
					r := ipBlockRule(cidr, ports)
					r.anyPort = anyPort
					rs.add(r)
				}
			}
		}
	}
	if k := spec.Kubernetes; k != nil {
		add := func(peers []networkingv1.NetworkPolicyPeer, nps []networkingv1.NetworkPolicyPort) {
			ports, spans := portsOf(nps)
			for _, peer := range peers {
				r := ipBlockRuleOf(peer, ports)
				if r == nil {
					if peer.NamespaceSelector == nil || peer.PodSelector == nil {
						continue
					}
					r = &rule{namespace: peer.NamespaceSelector.MatchLabels[namespaceLabel],
						selector: peer.PodSelector.DeepCopy(), ports: clonePorts(ports)}
				}
				for proto, span := range spans {
					r.addSpan(proto, span)
				}
				rs.add(r)
			}
		}
		for _, r := range k.Ingress {
			add(r.From, r.Ports)
		}
		for _, r := range k.Egress {
			add(r.To, r.Ports)
		}
	}
	for _, o := range spec.Outside {
		rs.add(outsideRuleOf(o))
	}
	return rs
}

// portsOf reads the ports of a NetworkPolicy rule, or of an outside peer, that
// the writer could have written: ports by protocol and port, and port ranges
// by protocol. A named port is not one the writer writes, and is left out.
func portsOf(nps []networkingv1.NetworkPolicyPort) (map[portRef]struct{}, map[string]portSpan) {
	ports := map[portRef]struct{}{}
	spans := map[string]portSpan{}
	for _, p := range nps {
		if p.Port == nil || p.Port.Type != intstr.Int {
			continue
		}
		proto := "tcp"
		if p.Protocol != nil {
			proto = strings.ToLower(string(*p.Protocol))
		}
		if p.EndPort != nil {
			spans[proto] = portSpan{lo: uint32(p.Port.IntVal), hi: uint32(*p.EndPort)}
			continue
		}
		ports[portRef{protocol: proto, port: uint32(p.Port.IntVal)}] = struct{}{}
	}
	return ports, spans
}

func clonePorts(p map[portRef]struct{}) map[portRef]struct{} {
	c := make(map[portRef]struct{}, len(p))
	for k := range p {
		c[k] = struct{}{}
	}
	return c
}

// specOf writes a proposal spec in its one canonical form: rules sorted by peer,
// ports sorted and without duplicates, so that equal content is equal YAML.
func specOf(backend v1alpha1.Backend, target v1alpha1.TargetRef, d v1alpha1.Direction,
	podSelector *metav1.LabelSelector, rs rules,
) v1alpha1.PolicySpec {
	spec := v1alpha1.PolicySpec{Backend: backend, TargetRef: target, Direction: d}
	sorted := make([]*rule, 0, len(rs))
	for _, r := range rs {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *rule) int { return cmp.Compare(a.key(), b.key()) })
	sorted = slices.DeleteFunc(sorted, func(r *rule) bool {
		if r.outside() {
			spec.Outside = append(spec.Outside, r.outsidePeer())
		}
		return r.outside()
	})
	if backend == v1alpha1.BackendIstio {
		spec.Istio = &v1alpha1.IstioPolicySpec{Selector: v1alpha1.IstioSelector{MatchLabels: podSelector.MatchLabels}}
		for _, r := range sorted {
			var ports []string
			for _, p := range sortedPorts(r.ports) {
				ports = append(ports, strconv.FormatUint(uint64(p.port), 10))
			}
			ir := v1alpha1.IstioRule{
				From: []v1alpha1.IstioFrom{{Source: istioSource(r)}},
			}
			if !r.anyPort { // no operation allows every port
				ir.To = []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: ports}}}
			}
			spec.Istio.Rules = append(spec.Istio.Rules, ir)
		}
		return spec
	}
	k := &networkingv1.NetworkPolicySpec{
		PodSelector: *podSelector, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyType(d)},
	}
	for _, r := range sorted {
		peers := []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceLabel: r.namespace}},
			PodSelector:       r.selector,
		}}
		if r.cidr != "" {
			peers = ipBlockPeers(r)
		}
		ports := networkPolicyPorts(r)
		if d == v1alpha1.DirectionIngress {
			k.Ingress = append(k.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers, Ports: ports})
		} else {
			k.Egress = append(k.Egress, networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports})
		}
	}
	spec.Kubernetes = k
	return spec
}

// networkPolicyPorts are a rule's ports as a NetworkPolicy rule, or an outside
// peer, names them: each port, then each protocol's range; none for any port.
func networkPolicyPorts(r *rule) []networkingv1.NetworkPolicyPort {
	var ports []networkingv1.NetworkPolicyPort
	for _, p := range sortedPorts(r.ports) {
		proto := corev1.Protocol(strings.ToUpper(p.protocol))
		port := intstr.FromInt32(int32(p.port))
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	for _, p := range slices.Sorted(maps.Keys(r.spans)) {
		proto, span := corev1.Protocol(strings.ToUpper(p)), r.spans[p]
		port := intstr.FromInt32(int32(span.lo))
		np := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
		if span.hi > span.lo {
			np.EndPort = ptr.To(int32(span.hi))
		}
		ports = append(ports, np)
	}
	return ports
}

func sortedPorts(ports map[portRef]struct{}) []portRef {
	out := make([]portRef, 0, len(ports))
	for p := range ports {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b portRef) int {
		return cmp.Or(cmp.Compare(a.protocol, b.protocol), cmp.Compare(a.port, b.port))
	})
	return out
}
