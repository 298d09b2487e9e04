package netpolmatch

import (
	"slices"
	"strconv"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// AllowsIstio reports whether the L4 rules of an Istio ALLOW policy allow a
// source, by its principal (without spiffe://) or, for a source without one,
// its address or address block, on a destination port, as ztunnel would decide
// it from this policy alone. A nil spec allows everything; a spec without
// rules allows nothing, as an ALLOW policy that matches no request does.
func AllowsIstio(spec *v1alpha1.IstioPolicySpec, principal, address string, port int32) bool {
	_, ok := MatchIstio(spec, principal, address, port)
	return ok
}

// MatchIstio is AllowsIstio that also says which rule allowed the source: the
// index of the first one that does, or -1 for a nil spec or when none does.
func MatchIstio(spec *v1alpha1.IstioPolicySpec, principal, address string, port int32) (rule int, allowed bool) {
	if spec == nil {
		return -1, true
	}
	for i := range spec.Rules {
		r := &spec.Rules[i]
		if istioFromMatches(r.From, principal, address) && istioToMatches(r.To, port) {
			return i, true
		}
	}
	return -1, false
}

// istioFromMatches: an empty list matches every source; else one source
// must name the principal, or hold the address in one of its ipBlocks.
func istioFromMatches(from []v1alpha1.IstioFrom, principal, address string) bool {
	if len(from) == 0 {
		return true
	}
	p, isAddress := prefixOf(address)
	for i := range from {
		s := &from[i].Source
		if principal != "" && slices.Contains(s.Principals, principal) {
			return true
		}
		if !isAddress {
			continue
		}
		for _, b := range s.IPBlocks {
			if cidr, ok := prefixOf(b); ok && contains(cidr, p) {
				return true
			}
		}
	}
	return false
}

// istioToMatches: an empty list matches every port; else one operation must
// list the port, or list none.
func istioToMatches(to []v1alpha1.IstioTo, port int32) bool {
	if len(to) == 0 {
		return true
	}
	want := strconv.Itoa(int(port))
	for i := range to {
		ports := to[i].Operation.Ports
		if len(ports) == 0 || slices.Contains(ports, want) {
			return true
		}
	}
	return false
}
