package workload

import "time"

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
	// UnresolvedAmbiguousAddress: the end is known by its address only, and
	// more than one pod may have held that address at the flow's time (one
	// ended while the next started): which one sent or received is not
	// certain.
	UnresolvedAmbiguousAddress Unresolved = "ambiguous_address"
	// UnresolvedTooOld: the end is known by its address only, and the flow is
	// older than what the cache remembers of ended pods (their grace period,
	// or its own start): a pod that held the address then may be forgotten.
	UnresolvedTooOld Unresolved = "too_old"
)

// Unattributed reports whether an end with reason u is a pod of the cluster
// that could not be told with certainty (gone past its grace period, not yet
// known, or its address held by more than one pod at the flow's time): its
// flows are a coverage gap of the workloads concerned, never learned.
func (u Unresolved) Unattributed() bool {
	return u == UnresolvedNoPod || u == UnresolvedAmbiguousAddress || u == UnresolvedTooOld
}

// Resolver finds the workload of a pod, as the cluster stood at a flow's
// time. The enforcer extension implements it from the shared cache, which
// keeps an ended pod (deleted or finished) for a grace period.
type Resolver interface {
	// ResolveIP resolves the pod that held ip at time at to its workload:
	// never a pod that started after at or ended before it, and no pod
	// when more than one held ip then (UnresolvedAmbiguousAddress) or at is
	// older than what the cache remembers (UnresolvedTooOld). A zero at is
	// now.
	ResolveIP(ip string, at time.Time) (Ref, Unresolved)
	// ResolvePod resolves a pod by namespace and name to its workload, a
	// pod that ended within the grace period included. A name ending in "*"
	// is Goldmane's aggregate "<generateName>*", resolved through the pods
	// it matches.
	ResolvePod(namespace, name string) (Ref, Unresolved)
	// ResolveWorkload returns the workload that a flow attributes to w, the
	// workload that the data plane names for its pod (Hubble's workloads),
	// when the pod itself is no longer known: w, or a Job's CronJob, as
	// resolving the pod would; false when no such workload exists.
	ResolveWorkload(w Ref) (Ref, bool)
}

// Labeler gives the labels that a policy's selectors match a workload by.
type Labeler interface {
	// Labels returns the labels that the workload's pods carry (its pod
	// template's) and the labels of its namespace; false when the workload is
	// not known. The maps are shared: callers must not change them.
	Labels(w Ref) (pod, namespace map[string]string, ok bool)
}
