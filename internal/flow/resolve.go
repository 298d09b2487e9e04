package flow

import (
	"net/netip"

	"github.com/kubewarden/network-enforcer/internal/workload"
)

// ResolveEndpoint finds the workload of a flow's end: by pod name when the data
// plane names the pod, else (or when that pod is unknown) by address. The
// reason says why an end has no workload; it is empty when it has one. The
// learning and violation processors resolve ends alike through it.
func ResolveEndpoint(r workload.Resolver, end *Endpoint) (workload.Ref, workload.Unresolved) {
	switch end.External {
	case "":
	case ExternalHost:
		return workload.Ref{}, workload.UnresolvedHost
	case ExternalRemoteNode:
		return workload.Ref{}, workload.UnresolvedRemoteNode
	case ExternalAPIServer:
		return workload.Ref{}, workload.UnresolvedAPIServer
	default:
		return workload.Ref{}, workload.UnresolvedExternal
	}
	reason := workload.UnresolvedNoPod
	if end.Pod != "" && end.Namespace != "" {
		var w workload.Ref
		if w, reason = r.ResolvePod(end.Namespace, end.Pod); reason == "" {
			return w, ""
		}
	}
	if reason == workload.UnresolvedNoPod {
		if _, err := netip.ParseAddr(end.Address); err == nil {
			return r.ResolveIP(end.Address)
		}
	}
	return workload.Ref{}, reason
}
