package workload

// Unresolved says why a flow's end has no workload; empty when it has one.
type Unresolved string

// The reasons an end has no workload.
const (
	// UnresolvedNoPod: no running pod has that address or name.
	UnresolvedNoPod Unresolved = "no_pod"
	// UnresolvedHostNetwork: the pod shares its node's network, so no network
	// policy can select it by its address.
	UnresolvedHostNetwork Unresolved = "host_network"
	// UnresolvedBarePod: a pod without a controller; it has no workload that
	// could own a proposal, and its name changes with every pod.
	UnresolvedBarePod Unresolved = "bare_pod"
	// UnresolvedUnsupportedOwner: the pod's controller is not one of the
	// supported workload kinds (a ReplicaSet without a Deployment, a custom
	// controller).
	UnresolvedUnsupportedOwner Unresolved = "unsupported_owner"
	// UnresolvedExternal: the end is outside the cluster (the world, a network
	// set), as the data plane says.
	UnresolvedExternal Unresolved = "external"
	// UnresolvedHost: the end is a node, as the data plane says; with Cilium,
	// the node of the pod at the flow's other end.
	UnresolvedHost Unresolved = "host"
	// UnresolvedRemoteNode: the end is another node than that of the pod at
	// the flow's other end, as the data plane says (Cilium's remote-node).
	UnresolvedRemoteNode Unresolved = "remote_node"
	// UnresolvedAPIServer: the end is the Kubernetes API server, as the data
	// plane says.
	UnresolvedAPIServer Unresolved = "apiserver"
)

// Resolver finds the workload of a running pod. The enforcer extension
// implements it from the shared cache.
type Resolver interface {
	// ResolveIP resolves the pod that has ip to its workload.
	ResolveIP(ip string) (Ref, Unresolved)
	// ResolvePod resolves a pod by namespace and name to its workload. A name
	// ending in "*" is Goldmane's aggregate "<generateName>*", resolved through
	// the pods it matches.
	ResolvePod(namespace, name string) (Ref, Unresolved)
}

// Labeler gives the labels that a policy's selectors match a workload by.
type Labeler interface {
	// Labels returns the labels that the workload's pods carry (its pod
	// template's) and the labels of its namespace; false when the workload is
	// not known. The maps are shared: callers must not change them.
	Labels(w Ref) (pod, namespace map[string]string, ok bool)
}
