package enforcerextension

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// Enforcer is what the enforcer extension offers the other Network Enforcer
// components, which find it with Find.
type Enforcer interface {
	// ResolveIP resolves the pod that has ip to its workload.
	ResolveIP(ip string) (Workload, UnresolvedReason)
	// ResolvePod resolves a pod by namespace and name to its workload. A name
	// ending in "*" is Goldmane's aggregate "<generateName>*", resolved through
	// the pods it matches.
	ResolvePod(namespace, name string) (Workload, UnresolvedReason)
	// HasPolicy reports whether a WorkloadNetworkPolicy targets the workload in
	// that direction.
	HasPolicy(w workload.Ref, direction v1alpha1.Direction) bool
	// Selector returns the workload's current pod selector, or false when the
	// workload is gone or selects nothing that a policy could name.
	Selector(ctx context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool)
	// Labels returns the labels that the workload's pods carry (its pod
	// template's) and the labels of its namespace, which a policy's pod and
	// namespace selectors match; false when the workload is not known. The maps
	// are shared: callers must not change them.
	Labels(w workload.Ref) (pod, namespace map[string]string, ok bool)
	// Policies returns the WorkloadNetworkPolicies that target the workload in
	// that direction, straight from the cache: callers must not change them.
	Policies(w workload.Ref, direction v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy

	// Reader reads proposals and policies from the shared cache.
	Reader() client.Reader
	// Client writes to the API server. Only a leader's callbacks may write.
	Client() client.Client

	// OnLeading registers run, called in its own goroutine each time this
	// replica becomes the leader, with a context that ends when it stops being
	// the leader or the collector shuts down.
	OnLeading(run func(ctx context.Context))
	// IsLeader reports whether this replica leads now.
	IsLeader() bool
}

// Workload is one end of a flow resolved to its workload.
type Workload struct {
	workload.Ref
}

// UnresolvedReason says why an end did not resolve to a workload; empty when it
// did.
type UnresolvedReason string

// The reasons an end does not resolve.
const (
	// UnresolvedNoPod: no running pod has that address or name.
	UnresolvedNoPod UnresolvedReason = "no_pod"
	// UnresolvedHostNetwork: the pod shares its node's network, so no network
	// policy can select it by its address.
	UnresolvedHostNetwork UnresolvedReason = "host_network"
	// UnresolvedBarePod: a pod without a controller; it has no workload that
	// could own a proposal, and its name changes with every pod.
	UnresolvedBarePod UnresolvedReason = "bare_pod"
	// UnresolvedUnsupportedOwner: the pod's controller is not one of the
	// supported workload kinds (a ReplicaSet without a Deployment, a custom
	// controller).
	UnresolvedUnsupportedOwner UnresolvedReason = "unsupported_owner"
)

// Find returns the enforcer extension id from the host's extensions.
func Find(host component.Host, id component.ID) (Enforcer, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("extension %q is not configured: add it to service::extensions", id)
	}
	e, ok := ext.(Enforcer)
	if !ok {
		return nil, fmt.Errorf("extension %q is not an enforcer extension", id)
	}
	return e, nil
}
