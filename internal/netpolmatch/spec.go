package netpolmatch

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// MatchSpec judges a flow with peer on protocol and port against a proposal's
// or policy's spec, in namespace, as its backend's native object would be
// enforced by data plane dp: the NetworkPolicy spec (backends kubernetes and
// cilium) as the CNI would, the Istio spec as ztunnel would, the outside
// peers as the backend renders them, and what the data plane does whatever
// the policy says (dataplane.go). rule names the rule that allowed it
// (ingress[0], egress[1], rules[2], outside[3], or DataPlaneRule), "" when
// no rule did: the spec does not govern the direction, or it does not allow
// the flow.
func MatchSpec(spec *v1alpha1.PolicySpec, namespace string, dp DataPlane, p *Peer, protocol corev1.Protocol, port int32,
	sc SelectorCache) (rule string, allowed bool) {
	if passes(dp, spec, p) {
		return DataPlaneRule, true
	}
	if i := matchOutside(spec, dp, p, protocol, port); i >= 0 {
		return fmt.Sprintf("outside[%d]", i), true
	}
	if cidrBlind(dp, p.Class) {
		q := *p
		q.Address = "" // no address block selects it
		p = &q
	}
	var i int
	if spec.Backend == v1alpha1.BackendIstio {
		if i, allowed = MatchIstio(spec.Istio, p.Principal, p.Address, port); i >= 0 {
			rule = RuleName(spec, i)
		}
		return rule, allowed
	}
	if i, allowed = Match(spec.Kubernetes, namespace, spec.Direction, p, protocol, port, sc); i >= 0 {
		rule = RuleName(spec, i)
	}
	return rule, allowed
}

// RuleName names the rule at index i of the spec's rules for its direction.
func RuleName(spec *v1alpha1.PolicySpec, i int) string {
	switch {
	case spec.Backend == v1alpha1.BackendIstio:
		return fmt.Sprintf("rules[%d]", i)
	case spec.Direction == v1alpha1.DirectionEgress:
		return fmt.Sprintf("egress[%d]", i)
	}
	return fmt.Sprintf("ingress[%d]", i)
}

// Rules lists the names of the spec's rules for its direction, in order.
func Rules(spec *v1alpha1.PolicySpec) []string {
	n := 0
	switch {
	case spec.Backend == v1alpha1.BackendIstio:
		if spec.Istio != nil {
			n = len(spec.Istio.Rules)
		}
	case spec.Kubernetes == nil:
	case spec.Direction == v1alpha1.DirectionEgress:
		n = len(spec.Kubernetes.Egress)
	default:
		n = len(spec.Kubernetes.Ingress)
	}
	names := make([]string, n, n+len(spec.Outside))
	for i := range names {
		names[i] = RuleName(spec, i)
	}
	for i := range spec.Outside {
		names = append(names, fmt.Sprintf("outside[%d]", i))
	}
	return names
}

// WithoutRules returns a copy of spec without the rules that names name
// (as RuleName and Rules name them, outside[i] included): a policy's
// amendment leaves out its unused rules.
func WithoutRules(spec *v1alpha1.PolicySpec, names map[string]bool) v1alpha1.PolicySpec {
	out := *spec.DeepCopy()
	if len(names) == 0 {
		return out
	}
	keep := func(i int) bool { return !names[RuleName(spec, i)] }
	switch {
	case out.Istio != nil && spec.Backend == v1alpha1.BackendIstio:
		out.Istio.Rules = kept(out.Istio.Rules, keep)
	case out.Kubernetes != nil && spec.Direction == v1alpha1.DirectionEgress:
		out.Kubernetes.Egress = kept(out.Kubernetes.Egress, keep)
	case out.Kubernetes != nil:
		out.Kubernetes.Ingress = kept(out.Kubernetes.Ingress, keep)
	}
	out.Outside = kept(out.Outside, func(i int) bool { return !names[fmt.Sprintf("outside[%d]", i)] })
	return out
}

// kept is the elements of s whose index keep keeps, in order.
func kept[T any](s []T, keep func(int) bool) []T {
	var out []T
	for i := range s {
		if keep(i) {
			out = append(out, s[i])
		}
	}
	return out
}
