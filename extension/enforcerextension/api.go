package enforcerextension

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"go.opentelemetry.io/collector/component"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The enforcer extension offers the other components small interfaces, one per
// need, and each component asks Find for the union of those it uses: the flow
// path resolves (workload.Resolver, workload.Labeler) and reads policies
// (PolicyReader), the flow sources follow leadership (Leadership), and the
// writers run their controllers on each term (ProposalWriting,
// PolicyStatusSyncing). A component's test fakes only what it asks for.

// PolicyReader reads proposals, policies and workloads from the shared cache,
// on every replica, without a request to the API server.
type PolicyReader interface {
	// HasPolicy reports whether a WorkloadNetworkPolicy targets the workload in
	// that direction.
	HasPolicy(w workload.Ref, direction v1alpha1.Direction) bool
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
}

// Placement says where workloads run: a gap that the data plane reports for a
// node concerns the learning of the workloads with pods there.
type Placement interface {
	// WorkloadsOn returns the workloads with a running pod on node (on any
	// node for ""), each once.
	WorkloadsOn(node string) []workload.Ref
}

// Lister lists proposals and policies from the shared cache, as copies, on
// every replica: the review page's source.
type Lister interface {
	// ListProposals returns the proposals in namespace ("" for all).
	ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error)
	// ListPolicies returns the policies in namespace ("" for all).
	ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error)
}

// Renderer renders a proposal as the native object of the policy that its
// promotion would create, as the render controller creates it, with the
// cluster's addresses from the shared cache: the review page's native objects.
type Renderer interface {
	// RenderProposal returns the native object of proposal promoted in mode.
	RenderProposal(proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) (Native, error)
}

// Selectors gives a workload's pod selector, which a proposal's spec names.
type Selectors interface {
	// Selector returns the workload's current pod selector, or false when the
	// workload is gone or selects nothing that a policy could name.
	Selector(ctx context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool)
}

// Leadership is what a flow source needs to follow leadership: it streams only
// on the leader, and a graceful hand-over passes the stream's position on.
type Leadership interface {
	// OnLeading registers run, called in its own goroutine each time this
	// replica becomes the leader, with a context that ends when it stops being
	// the leader or the collector shuts down. It is for readers that follow
	// leadership; writers run a controller instead.
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
}

// Membership shares keys (the Cilium nodes that the hubble receiver reads
// directly) among the replicas that hold a membership Lease of their own: each
// key has one owner among the live members, chosen by rendezvous hashing, so a
// member that comes or goes moves only its own share. Membership starts with
// the first OnMembersChanged.
type Membership interface {
	// Owns reports whether this replica reads key now.
	Owns(key string) bool
	// OnMembersChanged registers fn, called in its own goroutine after the
	// set of live members changes (a member's Lease appears, expires or is
	// deleted): the caller asks Owns again for each of its keys.
	OnMembersChanged(fn func())
	// Checkpoint records that this replica handed every flow of key up to t
	// on; its membership Lease publishes the newest at its next renewal.
	Checkpoint(key string, t time.Time)
	// Claim is Checkpoint for a key this replica starts to read: it returns
	// once this replica's Lease holds the checkpoint (or ctx ends), so that a
	// replica that joins meanwhile finds the claim before the first read.
	Claim(ctx context.Context, key string, t time.Time) error
	// CheckpointOf returns the newest time that any member, live or gone,
	// published for key: a new owner resumes from it.
	CheckpointOf(key string) (time.Time, bool)
	// CountFrom returns the time up to which every flow of key is counted,
	// for its new owner: CheckpointOf(key) when its writer hands everything
	// up to it on (released, left gracefully); for a writer that was killed,
	// the time up to which a leader took key's records, as Counted published.
	CountFrom(key string) (time.Time, bool)
	// Release publishes at once that this replica no longer reads key, with
	// its checkpoint: the key's new owner need not wait for the next renewal.
	Release(key string)
	// Forget drops what this replica published of key, whose source is gone
	// (the Peer service removed the node): checkpoints do not outlive their
	// sources, and every renewal rewrites them.
	Forget(key string)
	// Settled reports whether CheckpointOf(key) is final: its writer
	// released key, or is no longer a live member; or it is this replica's or
	// a deleted member's, or there is none, and every other live member has
	// renewed since this replica joined (one may hold a claim on its way). A
	// new owner that resumes before then would count again what the previous
	// owner handed on since its last renewal.
	Settled(key string) bool
}

// Counting is what the leader's receiver of the members' records tells the
// membership: how far it took each key's records, so that the next owner of a
// key whose reader was killed does not count again what that reader sent.
type Counting interface {
	// Counted records that this replica, leading, took every record of key's
	// flows up to t; its membership Lease publishes the newest.
	Counted(key string, t time.Time)
}

// LeaderLocator finds the leading replica, for the readers that send it what
// they learned: from the leader Lease's holder and the cached pods, without a
// Service or a write to a Pod.
type LeaderLocator interface {
	// LeaderAddress returns the leading replica's pod IP and its identity in
	// the leader Lease (new with each start of its process), or false when no
	// leader is known or its pod has no IP yet.
	LeaderAddress() (addr, identity string, ok bool)
}

// Watch is a change to a cached type that asks a writer's controller for
// reconciles, with controller-runtime's handler and predicates: a writer says
// what it watches, the extension runs it on each term of leadership.
type Watch struct {
	// Object is the cached type.
	Object client.Object
	// Handler maps a change to the keys to reconcile; nil is the object's own
	// key (handler.EnqueueRequestForObject).
	Handler handler.EventHandler
	// Predicates filter the changes that reach the handler.
	Predicates []predicate.Predicate
}

// ProposalWriting runs the proposal writer's controller.
type ProposalWriting interface {
	// WriteProposals registers the proposal writer. Each term of leadership
	// runs a controller that calls reconcile once for each key that watches
	// or the returned Queue give, with a ProposalWriter for that term; an
	// error retries the key with backoff. resync, when set, is called at the
	// start of each term to enqueue what the previous leader may have left
	// unwritten.
	WriteProposals(watches []Watch, reconcile func(ctx context.Context, key types.NamespacedName, w ProposalWriter) error,
		resync func(enqueue func(types.NamespacedName))) Queue
}

// PolicyStatusSyncing runs the controller of the owner of policies' status.
type PolicyStatusSyncing interface {
	// SyncPolicyStatus registers the owner of the policies' status. Each term
	// runs a controller that calls reconcile for each key that watches or the
	// returned Queue give, with a PolicyStatusWriter for that term.
	SyncPolicyStatus(watches []Watch, reconcile func(ctx context.Context, key types.NamespacedName, w PolicyStatusWriter) error) Queue
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

// FindOptional is Find for a component whose `enforcer` key may be unset: nil
// id finds nothing and is no error.
func FindOptional[T any](host component.Host, id *component.ID) (T, error) {
	if id == nil {
		var none T
		return none, nil
	}
	return Find[T](host, *id)
}

// Find returns the enforcer extension id from the host's extensions as T, the
// interfaces that the calling component uses.
func Find[T any](host component.Host, id component.ID) (T, error) {
	var none T
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return none, fmt.Errorf("extension %q is not configured: add it to service::extensions", id)
	}
	e, ok := ext.(T)
	if !ok {
		return none, fmt.Errorf("extension %q is not an enforcer extension", id)
	}
	return e, nil
}
