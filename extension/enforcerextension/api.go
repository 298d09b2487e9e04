package enforcerextension

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

	// Policy returns the WorkloadNetworkPolicy key from the shared cache (a
	// copy), or false when there is none.
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)

	// Proposal returns the WorkloadNetworkPolicyProposal key from the shared
	// cache (a copy), or false when there is none: a promoted policy's status
	// carries on from its proposal's observed edges.
	Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool)

	// OnLeading registers run, called in its own goroutine each time this
	// replica becomes the leader, with a context that ends when it stops being
	// the leader or the collector shuts down. It is for readers that follow
	// leadership (a flow source streams only on the leader); writers register
	// a controller instead.
	OnLeading(run func(ctx context.Context))
	// IsLeader reports whether this replica leads now.
	IsLeader() bool
	// ResumeFrom returns, in a term, the time up to which the previous leader
	// wrote every flow it received, when it handed the stream over on a
	// graceful shutdown; false when it did not (a crash, a lost lease), and a
	// flow source reads its backfill.
	ResumeFrom() (time.Time, bool)
	// HandedOn tells the extension, from a flow source that stops on
	// shutdown, the time of the newest flow it handed to the pipeline: the
	// next leader resumes after it once the writers have written everything.
	HandedOn(newest time.Time)

	// WriteProposals registers the proposal writer. Each term of leadership
	// runs a controller that calls reconcile once for each key given to the
	// returned Queue, with a ProposalWriter for that term; an error retries the
	// key with backoff. resync, when set, is called at the start of each term
	// to enqueue what the previous leader may have left unwritten.
	WriteProposals(reconcile func(ctx context.Context, key types.NamespacedName, w ProposalWriter) error,
		resync func(enqueue func(types.NamespacedName))) Queue
	// SyncPolicyStatus registers the owner of the violation status. Each term
	// runs a controller that calls reconcile for each policy that is created
	// or whose spec or annotations change, and for each key given to the
	// returned Queue, with a PolicyStatusWriter for that term.
	SyncPolicyStatus(reconcile func(ctx context.Context, key types.NamespacedName, w PolicyStatusWriter) error) Queue

	// ListProposals returns the proposals in namespace ("" for all) from the
	// shared cache, as copies, on every replica.
	ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error)
	// ListPolicies returns the policies in namespace ("" for all) from the
	// shared cache, as copies, on every replica.
	ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error)
}

// Queue asks a writer's controller for reconciles.
type Queue interface {
	// Enqueue asks for a reconcile of key after delay. Keys enqueued again
	// before their reconcile are reconciled once; keys enqueued while this
	// replica does not lead are reconciled when it next leads.
	Enqueue(key types.NamespacedName, delay time.Duration)
	// OnHandOff registers pending, which a leader calls on a graceful
	// shutdown once the flow sources have stopped: it returns the keys that
	// hold what the writer has not written, and from then on the writer
	// writes without spacing. The leader reconciles each once more, and hands
	// the stream over to the next leader only when all of them succeeded.
	OnHandOff(pending func() []types.NamespacedName)
}

// ProposalWriter is the proposal writer's client for one term of leadership:
// it reads proposals from the API server and creates and updates them and
// their status, nothing else. Its writes fail once the term has ended.
type ProposalWriter interface {
	// Get reads a proposal from the API server (not the cache), so that an
	// update carries its current resourceVersion.
	Get(ctx context.Context, key types.NamespacedName, p *v1alpha1.WorkloadNetworkPolicyProposal) error
	Create(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error
	Update(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error
	// UpdateStatus writes p's status (the status subresource), with p's
	// resourceVersion: the proposal's spec is left as it is.
	UpdateStatus(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error
	// Event records a Kubernetes Event on the proposal.
	Event(p *v1alpha1.WorkloadNetworkPolicyProposal, eventType, reason, message string)
}

// PolicyStatusWriter is the status owner's client for one term of leadership:
// it changes policies' status and removes acknowledge annotations, nothing
// else. Its writes fail once the term has ended.
type PolicyStatusWriter interface {
	// UpdateStatus writes the status of policy key as mutate leaves it. mutate
	// gets the newest copy the enforcer has (the cache's first, the API
	// server's after a conflict) and reports whether it changed anything; the
	// write carries that copy's resourceVersion, so that what another writer
	// wrote in the meantime is never overwritten. It returns the policy as
	// written (or as read, when nothing changed).
	UpdateStatus(ctx context.Context, key types.NamespacedName,
		mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error)
	// RemoveAnnotations deletes annotation keys from the policy; it touches
	// nothing else.
	RemoveAnnotations(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, keys []string) error
	// Event records a Kubernetes Event on the policy.
	Event(p *v1alpha1.WorkloadNetworkPolicy, eventType, reason, message string)
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

// FindOptional is Find for a component whose `enforcer` key may be unset: nil
// id finds nothing and is no error.
func FindOptional(host component.Host, id *component.ID) (Enforcer, error) {
	if id == nil {
		return nil, nil
	}
	return Find(host, *id)
}

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
