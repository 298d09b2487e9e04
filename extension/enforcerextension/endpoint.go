package enforcerextension

import (
	"net/netip"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// Reasons, besides the UnresolvedReasons, that ResolveEndpoint gives for an end
// that is not a workload.
const (
	// ReasonExternal: the end is outside the cluster (the world, a network set).
	ReasonExternal = "external"
	// ReasonHost: the end is a node.
	ReasonHost = "host"
)

// ResolveEndpoint finds the workload of a flow's end: by pod name when the data
// plane names the pod, else (or when that pod is unknown) by address. The
// reason says why an end has no workload; it is empty when it has one. The
// learning and violation processors resolve ends alike through it.
func ResolveEndpoint(e Enforcer, end *flow.Endpoint) (Workload, string) {
	switch end.External {
	case "":
	case flow.ExternalHost:
		return Workload{}, ReasonHost
	default:
		return Workload{}, ReasonExternal
	}
	reason := UnresolvedNoPod
	if end.Pod != "" && end.Namespace != "" {
		var w Workload
		if w, reason = e.ResolvePod(end.Namespace, end.Pod); reason == "" {
			return w, ""
		}
	}
	if reason == UnresolvedNoPod {
		if _, err := netip.ParseAddr(end.Address); err == nil {
			w, r := e.ResolveIP(end.Address)
			if r == "" {
				return w, ""
			}
			reason = r
		}
	}
	return Workload{}, string(reason)
}
