// Package termwriter runs the controllers of the writers of flows' effects
// (the proposal writer in k8swriterexporter, the status owner in
// violationprocessor) on the leader elector's terms, on the enforcer
// extension's shared cache and client, each term with a narrow client that
// refuses a write once the term has ended. Each writer owns its controller: it
// registers it at Start and ends it with Queue.Stop in its own Shutdown, and
// when it could not write everything on a leader's way out, it tells the
// elector to withhold the hand-off of the flow stream.
package termwriter

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// Watch is a change to a cached type that asks a writer's controller for
// reconciles, with controller-runtime's handler and predicates: a writer says
// what it watches.
type Watch = termcontroller.Watch

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
	// EnqueuePriority is Enqueue at a priority: of the keys whose delay has
	// passed, the controller reconciles the highest priority first, and
	// keys of one priority in the order they were enqueued. A key enqueued
	// again keeps the highest priority it asked for. Enqueue and the
	// watches ask for 0.
	EnqueuePriority(key types.NamespacedName, delay time.Duration, priority int)
	// Stop ends the writer's controller for good; the writer calls it from
	// its own Shutdown, which the collector runs before the extensions'
	// while this replica still holds the lease. A leader first reconciles
	// keys (what the writer holds unwritten) once more, at once, and waits
	// for each to succeed, at most until ctx ends or the hand-off's bound:
	// the flow stream goes to the next leader with the lease only when
	// every writer's Stop wrote everything. The error says what was not
	// written; on a replica that does not lead, Stop writes nothing and
	// returns nil.
	Stop(ctx context.Context, keys []types.NamespacedName) error
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
	// server's after a conflict) and reports whether it changed anything. The
	// status owner's fields (every one but the Rendered condition) are
	// applied under its own field manager, with that copy's resourceVersion:
	// another writer's fields are never written, and a count never added
	// twice. It returns the policy as written (or as read, when nothing
	// changed).
	UpdateStatus(ctx context.Context, key types.NamespacedName,
		mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error)
	// RemoveAnnotations deletes annotation keys from the policy; it touches
	// nothing else.
	RemoveAnnotations(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, keys []string) error
	// Event records a Kubernetes Event on the policy.
	Event(p *v1alpha1.WorkloadNetworkPolicy, eventType, reason, message string)
}
