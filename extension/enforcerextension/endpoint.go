package enforcerextension

import (
	"net/netip"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// Reasons, besides the UnresolvedReasons, that ResolveEndpoint gives for an end
// that is not a workload.
const (
	// ReasonExternal: the end is outside the cluster (the world, a network set).
	ReasonExternal = "external"
	// ReasonHost: the end is a node.
	ReasonHost = "host"
	// ReasonAPIServer: the end is the Kubernetes API server.
	ReasonAPIServer = "apiserver"
)

// PeerClassOf is the class, in a proposal's or policy's observed edges, of an
// end that ResolveEndpoint did not resolve for reason ("" for a workload).
func PeerClassOf(reason string) v1alpha1.PeerClass {
	switch reason {
	case "":
		return v1alpha1.PeerClassWorkload
	case ReasonExternal:
		return v1alpha1.PeerClassExternal
	case ReasonHost:
		return v1alpha1.PeerClassHost
	case ReasonAPIServer:
		return v1alpha1.PeerClassAPIServer
	case string(UnresolvedHostNetwork):
		return v1alpha1.PeerClassNode
	case string(UnresolvedBarePod):
		return v1alpha1.PeerClassBarePod
	}
	return v1alpha1.PeerClassUnidentified
}

// ResolveEndpoint finds the workload of a flow's end: by pod name when the data
// plane names the pod, else (or when that pod is unknown) by address. The
// reason says why an end has no workload; it is empty when it has one. The
// learning and violation processors resolve ends alike through it.
func ResolveEndpoint(e Enforcer, end *flow.Endpoint) (Workload, string) {
	switch end.External {
	case "":
	case flow.ExternalHost:
		return Workload{}, ReasonHost
	case flow.ExternalAPIServer:
		return Workload{}, ReasonAPIServer
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

// PeerOf is the peer of an observed edge as the matcher judges it: a
// workload with its pod and namespace labels from the cache (none when it is
// gone, which only an empty selector matches), a bare pod by its namespace,
// and any peer by its principal and address. The proposal writer and the
// policy status sync judge observed edges alike through it.
func PeerOf(e Enforcer, k *observed.Key) *netpolmatch.Peer {
	p := &netpolmatch.Peer{Address: k.Address, Principal: k.Principal, Namespace: k.Namespace}
	if k.Namespace != "" && k.Kind != "" && k.Kind != observed.KindPod {
		p.PodLabels, p.NamespaceLabels, _ = e.Labels(workload.Ref{Namespace: k.Namespace, Kind: v1alpha1.WorkloadKind(k.Kind), Name: k.Name})
	}
	return p
}

// JudgeSpec judges observed edges by spec, a policy's or a proposal's in
// namespace, with the matcher that judges monitor-mode violations. It judges
// a copy of spec: a store keeps the judge for the edges it does not track,
// while the next status write decodes the API server's answer into the
// object that spec belongs to.
func JudgeSpec(e Enforcer, spec *v1alpha1.PolicySpec, namespace string) observed.Judge {
	sc := netpolmatch.SelectorCache{}
	spec = spec.DeepCopy()
	return func(k *observed.Key) (string, bool) {
		return netpolmatch.MatchSpec(spec, namespace, PeerOf(e, k), k.Protocol, k.Port, sc)
	}
}
