package learningprocessor

import (
	"net/netip"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// reasonPodAddress: a peer that the data plane calls outside the cluster, or
// that has no identity, but whose address is a pod's of the cluster: it is
// never learned as an address block.
const reasonPodAddress = "peer_pod_address"

// outside learns the peer of edge, an end outside the learning scope for
// reason, as outside_peers says: it sets the edge's entity, DNS name or address
// block, and returns the peer's further DNS names, which are learned too; drop
// is the reason to count when the peer is not learned. With entities, the API
// server and the nodes are learned as what they are (the pod's own node, the
// other nodes, or the nodes, as narrowly as the data plane tells them), an
// outside service by
// each of the names that the data plane gives for it (its flows counted on
// the first in alphabetical order, as the flow holds them), and anything
// else as ip_blocks would; never a pod's address.
func (p *learningProcessor) outside(edge *learning.Edge, end *flow.Endpoint, reason workload.Unresolved, provider flow.Provider,
	m *memo) (more []string, drop string) {
	cilium := provider == flow.ProviderCilium
	istio := provider == flow.ProviderIstio
	if p.cfg.OutsidePeers == OutsidePeersEntities {
		switch reason {
		case workload.UnresolvedAPIServer:
			edge.PeerEntity = v1alpha1.EntityAPIServer
			return nil, ""
		case workload.UnresolvedHost:
			// Only Cilium tells the pod's own node from the others. Its
			// calls into the pod (the kubelet's probes) pass on Cilium
			// whatever the policy says, and the evidence says so (the rule
			// data-plane); the rule learned for them allows no more than
			// that, and keeps the workload's direction in a proposal, which
			// a workload that only the kubelet calls would not have.
			edge.PeerEntity = v1alpha1.EntityNodes
			if cilium {
				edge.PeerEntity = v1alpha1.EntityHost
			}
			return nil, ""
		case workload.UnresolvedRemoteNode:
			edge.PeerEntity = v1alpha1.EntityRemoteNodes
			return nil, ""
		case workload.UnresolvedHostNetwork:
			edge.PeerEntity = v1alpha1.EntityNodes
			return nil, ""
		case workload.UnresolvedExternal:
			if len(end.Names) == 0 {
				break
			}
			if addr, err := netip.ParseAddr(end.Address); err == nil && m.podAddress(addr.Unmap().WithZone("")) {
				return nil, reasonPodAddress
			}
			edge.PeerName = end.Names[0]
			return end.Names[1:], ""
		default: // pods of the cluster, and ends that could not be told: as ip_blocks
		}
	}
	edge.PeerCIDR, drop = p.outsideBlock(end, reason, istio, m)
	return nil, drop
}

// outsideBlock returns the address block that a peer outside the learning
// scope is learned as with outside_peers ip_blocks (and entities, for a peer
// that it has no other name for): its address cut to the
// configured prefix length. reason is why the peer did not resolve to a
// workload; drop is the reason to count when it is not learned ("" when it
// is). Only an end that the data plane puts outside the cluster (external,
// host) or that the cache knows as a host-network pod's (its node's address)
// is learned, with istio also one that no pod has (a source without an
// identity: ztunnel does not say where it is), and never one whose address is
// a pod's.
func (p *learningProcessor) outsideBlock(end *flow.Endpoint, reason workload.Unresolved, istio bool, m *memo) (cidr, drop string) {
	drop = "peer_" + string(reason)
	if istio {
		drop = reasonNoIdentity
	}
	if p.cfg.OutsidePeers == OutsidePeersDrop {
		return "", drop
	}
	switch reason {
	case workload.UnresolvedExternal, workload.UnresolvedHost, workload.UnresolvedRemoteNode, workload.UnresolvedAPIServer, workload.UnresolvedHostNetwork:
	case workload.UnresolvedNoPod, workload.UnresolvedTooOld:
		// An Istio source without an identity is outside the mesh, wherever
		// it was; any other end is a pod the cache does not know (yet, or
		// any more). Whether the address is a pod's now is checked below.
		if !istio {
			return "", drop
		}
	default:
		return "", drop // a pod of the cluster (bare, unsupported owner), or an istio workload
	}
	addr, err := netip.ParseAddr(end.Address)
	if err != nil {
		return "", drop // a Goldmane name (pub, pvt, a network set's) is no address
	}
	addr = addr.Unmap().WithZone("")
	if m.podAddress(addr) {
		return "", reasonPodAddress
	}
	bits := p.cfg.IPv6Prefix
	if addr.Is4() {
		bits = p.cfg.IPv4Prefix
	}
	prefix, err := addr.Prefix(bits)
	if err != nil {
		return "", drop
	}
	return prefix.String(), ""
}

// podAddress reports whether addr is the address of a pod of the cluster: one
// that resolves to a workload, or to a pod without a supported one. A
// host-network pod's address is its node's, not a pod's.
func (m *memo) podAddress(addr netip.Addr) bool {
	if pod, ok := m.pods[addr]; ok {
		return pod
	}
	if m.pods == nil {
		m.pods = map[netip.Addr]bool{}
	}
	// As the cache stands now: an address that a pod holds, or that more
	// than one pod held, is a pod's.
	_, r := m.p.enforcer.ResolveIP(addr.String(), time.Time{})
	pod := r == "" || r == workload.UnresolvedBarePod || r == workload.UnresolvedUnsupportedOwner || r == workload.UnresolvedAmbiguousAddress
	m.pods[addr] = pod
	return pod
}
