package netpolmatch

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// EntityOf is the narrowest entity of spec.outside that stands for a peer of
// class, or "" for a class that no entity names: the pod's own node (Host),
// the other nodes (RemoteNodes), a node that a host-network pod's address
// says nothing more of (Nodes).
func EntityOf(class v1alpha1.PeerClass) v1alpha1.Entity {
	switch class {
	case v1alpha1.PeerClassAPIServer:
		return v1alpha1.EntityAPIServer
	case v1alpha1.PeerClassHost:
		return v1alpha1.EntityHost
	case v1alpha1.PeerClassRemoteNode:
		return v1alpha1.EntityRemoteNodes
	case v1alpha1.PeerClassNode:
		return v1alpha1.EntityNodes
	default:
		return ""
	}
}

// Covers reports whether entity e of spec.outside stands for a peer of
// class: Nodes for every node, Host and RemoteNodes for theirs alone.
func Covers(e v1alpha1.Entity, class v1alpha1.PeerClass) bool {
	switch e {
	case v1alpha1.EntityNodes:
		return class == v1alpha1.PeerClassHost || class == v1alpha1.PeerClassRemoteNode || class == v1alpha1.PeerClassNode
	case v1alpha1.EntityAPIServer, v1alpha1.EntityHost, v1alpha1.EntityRemoteNodes:
		return e == EntityOf(class)
	}
	return false
}

// Rendered reports whether a spec of backend renders the outside peer o in
// its native object on data plane dp, in a form the data plane enforces;
// when it does not, why says so. The render controller and the judge ask
// the same question here.
//   - cilium renders every peer: the entities as Cilium's own, names as toFQDNs.
//   - kubernetes renders the API server and the nodes as ipBlocks of their
//     addresses, which Cilium does not select by (cidrBlind); a NetworkPolicy
//     has no DNS names.
//   - istio renders the API server and the nodes as source ipBlocks; an
//     AuthorizationPolicy cannot match a source by DNS name.
func Rendered(backend v1alpha1.Backend, dp DataPlane, o *v1alpha1.OutsidePeer) (ok bool, why string) {
	switch {
	case backend == v1alpha1.BackendCilium:
		return true, ""
	case o.DNSName != "" && backend == v1alpha1.BackendKubernetes:
		return false, "a NetworkPolicy cannot name a DNS name: choose backend cilium on Cilium, or outside_peers ip_blocks"
	case o.DNSName != "":
		return false, "an AuthorizationPolicy cannot match a source by DNS name"
	case backend == v1alpha1.BackendKubernetes && dp == DataPlaneCilium:
		return false, "Cilium does not select the API server or the nodes by a NetworkPolicy ipBlock: choose backend cilium"
	}
	return true, ""
}

// matchOutside returns the index of the first peer of the spec's outside list
// that allows the flow with p on protocol and port, as the backend renders it
// on data plane dp; -1 when none does.
func matchOutside(spec *v1alpha1.PolicySpec, dp DataPlane, p *Peer, protocol corev1.Protocol, port int32) int {
	for i := range spec.Outside {
		o := &spec.Outside[i]
		switch {
		case o.Entity != "" && !Covers(o.Entity, p.Class):
			continue
		case o.DNSName != "" && !slices.ContainsFunc(p.DNSNames, func(n string) bool { return NameMatches(o.DNSName, n) }):
			continue
		}
		if ok, _ := Rendered(spec.Backend, dp, o); ok && portsMatch(o.Ports, protocol, port) {
			return i
		}
	}
	return -1
}

// NameMatches reports whether a DNS name of spec.outside, a full name or a
// pattern whose first label is *, matches name, as Cilium's toFQDNs
// matchName and matchPattern do: * stands for one label.
func NameMatches(pattern, name string) bool {
	if name == "" {
		return false
	}
	rest, ok := strings.CutPrefix(pattern, "*.")
	if !ok {
		return pattern == name
	}
	label, parent, found := strings.Cut(name, ".")
	return found && label != "" && parent == rest
}

// WhyBlocked says why the spec, as data plane dp enforces it, blocks the
// observed edges of a peer class that it does not allow: what the WouldBlock
// condition tells a person before promotion, with what to choose instead.
func WhyBlocked(spec *v1alpha1.PolicySpec, dp DataPlane) func(v1alpha1.PeerClass) string {
	return func(class v1alpha1.PeerClass) string {
		switch class {
		case v1alpha1.PeerClassWorkload:
			return "a workload that no rule of the spec allows on that port"
		case v1alpha1.PeerClassBarePod:
			return "a pod without a workload, which no selector outlives"
		case v1alpha1.PeerClassUnidentified:
			return "an end that could not be told: a pod the cache did not know, or an Istio source without an identity"
		case v1alpha1.PeerClassExternal:
			for i := range spec.Outside {
				if o := &spec.Outside[i]; o.DNSName != "" {
					if ok, why := Rendered(spec.Backend, dp, o); !ok {
						return why
					}
				}
			}
			return "an outside peer that the spec does not allow: learn it by its DNS name with outside_peers entities, or by its address with ip_blocks"
		default: // the API server and the nodes, below
		}
		entity := EntityOf(class)
		for i := range spec.Outside {
			if o := &spec.Outside[i]; Covers(o.Entity, class) {
				if ok, why := Rendered(spec.Backend, dp, o); !ok {
					return why
				}
				return "spec.outside allows the " + string(o.Entity) + " on other ports only"
			}
		}
		if cidrBlind(dp, class) && spec.Backend != v1alpha1.BackendCilium {
			return "Cilium does not select the API server or the nodes by an address block: choose backend cilium and outside_peers entities"
		}
		return "not in spec.outside: learn it with outside_peers entities, or add entity " + string(entity)
	}
}
