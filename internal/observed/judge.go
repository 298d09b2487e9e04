package observed

import (
	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// ClassOf is the class, in a proposal's or policy's observed edges, of an end
// that did not resolve to a workload for reason ("" for a workload).
func ClassOf(reason workload.Unresolved) v1alpha1.PeerClass {
	switch reason {
	case "":
		return v1alpha1.PeerClassWorkload
	case workload.UnresolvedExternal:
		return v1alpha1.PeerClassExternal
	case workload.UnresolvedHost:
		return v1alpha1.PeerClassHost
	case workload.UnresolvedRemoteNode:
		return v1alpha1.PeerClassRemoteNode
	case workload.UnresolvedAPIServer:
		return v1alpha1.PeerClassAPIServer
	case workload.UnresolvedHostNetwork:
		return v1alpha1.PeerClassNode
	case workload.UnresolvedBarePod:
		return v1alpha1.PeerClassBarePod
	case workload.UnresolvedNoPod, workload.UnresolvedUnsupportedOwner, workload.UnresolvedAmbiguousAddress, workload.UnresolvedTooOld:
		return v1alpha1.PeerClassUnidentified
	}
	return v1alpha1.PeerClassUnidentified
}

// PeerOf is the peer of an observed edge as the matcher judges it: a
// workload with its pod and namespace labels (none when it is gone, which
// only an empty selector matches), a bare pod by its namespace, and any peer
// by its principal and address.
func PeerOf(labels workload.Labeler, k *Key) *netpolmatch.Peer {
	p := &netpolmatch.Peer{Address: k.Address, Principal: k.Principal, Namespace: k.Namespace, Class: k.Class}
	if k.DNSName != "" {
		p.DNSNames = []string{k.DNSName}
	}
	if k.Namespace != "" && k.Kind != "" && k.Kind != KindPod {
		p.PodLabels, p.NamespaceLabels, _ = labels.Labels(workload.Ref{Namespace: k.Namespace, Kind: v1alpha1.WorkloadKind(k.Kind), Name: k.Name})
	}
	return p
}

// JudgeSpec judges observed edges by spec, a policy's or a proposal's in
// namespace, with the matcher that judges monitor-mode violations: the
// proposal writer and the policy status owner judge alike through it, as
// the data plane dp enforces the object. It
// judges a copy of spec: a store keeps the judge for the edges it does not
// track, while the next status write decodes the API server's answer into the
// object that spec belongs to.
func JudgeSpec(labels workload.Labeler, spec *v1alpha1.PolicySpec, namespace string, dp netpolmatch.DataPlane) Judge {
	sc := netpolmatch.SelectorCache{}
	spec = spec.DeepCopy()
	return func(k *Key) (string, bool) {
		return MatchKey(labels, spec, namespace, dp, k, sc)
	}
}

// MatchKey judges one observed edge k by spec, a policy's or a proposal's
// in namespace, as the data plane dp enforces its object: the one verdict
// of an edge, which the preview of a proposal, the evidence of a policy and
// the monitor violations judged in software all read.
func MatchKey(labels workload.Labeler, spec *v1alpha1.PolicySpec, namespace string, dp netpolmatch.DataPlane, k *Key,
	sc netpolmatch.SelectorCache) (rule string, allowed bool) {
	return netpolmatch.MatchSpec(spec, namespace, dp, PeerOf(labels, k), k.Protocol, k.Port, sc)
}
