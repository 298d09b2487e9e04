package netpolmatch

import (
	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// DataPlane is the data plane that carries the flows a spec is judged on, by
// the name of its provider (istio, calico, cilium); empty when not known.
// What a data plane does with a peer beyond the workloads is its own, and a
// preview that says otherwise is wrong either way: each rule below is
// written down, with its source, in docs/data-plane-verdicts.md.
type DataPlane string

// The data planes.
const (
	DataPlaneIstio  DataPlane = "istio"
	DataPlaneCalico DataPlane = "calico"
	DataPlaneCilium DataPlane = "cilium"
)

// DataPlaneRule is the name under which a flow that the data plane lets
// through whatever the policy says is allowed; no rule of the spec has it.
const DataPlaneRule = "data-plane"

// passes reports whether the data plane lets the flow through whatever the
// spec says. Cilium lets its node's own traffic into the node's pods (the
// agent's allow-localhost; the kubelet's probes), and names that node host,
// apart from the remote nodes. The Kubernetes documentation says the same of
// every NetworkPolicy implementation ("traffic to and from the node where a
// Pod is running is always allowed"), but only Cilium's flows tell the pod's
// own node from the others, so only there is it judged so.
func passes(dp DataPlane, spec *v1alpha1.PolicySpec, p *Peer) bool {
	return dp == DataPlaneCilium && p.Class == v1alpha1.PeerClassHost && spec.Direction == v1alpha1.DirectionIngress
}

// cidrBlind reports whether the data plane's CIDR rules (a NetworkPolicy
// ipBlock, a CiliumNetworkPolicy toCIDRSet) cannot select a peer of class:
// Cilium gives the API server, its host and the remote nodes (and so the
// host-network pods on them) reserved identities that CIDR rules do not
// select, unless the agent runs with policy-cidr-match-mode nodes.
func cidrBlind(dp DataPlane, class v1alpha1.PeerClass) bool {
	if dp != DataPlaneCilium {
		return false
	}
	switch class {
	case v1alpha1.PeerClassAPIServer, v1alpha1.PeerClassHost, v1alpha1.PeerClassRemoteNode, v1alpha1.PeerClassNode:
		return true
	default:
		return false
	}
}
