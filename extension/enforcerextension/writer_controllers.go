package enforcerextension

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The writers of flows' effects run their reconcile functions, which live in
// their components (the proposal writer in k8swriterexporter, the status owner
// in violationprocessor), as controllers that the extension hosts on each
// term of leadership, so that a hand-off can drain them.

// WriteProposals runs the proposal writer as a controller on each term.
func (e *enforcer) WriteProposals(reconcile func(context.Context, types.NamespacedName, ProposalWriter) error,
	resync func(enqueue func(types.NamespacedName))) Queue {
	// A spec edit changes the verdicts on the proposal's observed edges,
	// which the writer judges again at once.
	c := &termController{name: "proposal-writer", resync: resync, watches: []watch{{
		obj:        &v1alpha1.WorkloadNetworkPolicyProposal{},
		predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}},
	}}}
	c.reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &proposalWriter{e.termWriter(ctx)})
	}
	return e.runWriter(c)
}

// SyncPolicyStatus runs the status owner as a controller on each term, told of
// every policy that is created or deleted or whose spec or annotations change,
// and of the policies that share its target and direction (whether a target is
// shared is in their status too). Its own status writes do not ask it for
// another round.
func (e *enforcer) SyncPolicyStatus(reconcile func(context.Context, types.NamespacedName, PolicyStatusWriter) error) Queue {
	c := &termController{name: "policy-status", watches: []watch{{
		obj:     &v1alpha1.WorkloadNetworkPolicy{},
		handler: handler.EnqueueRequestsFromMapFunc(e.policiesSharingTarget),
		predicates: []predicate.Predicate{predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})},
	}}}
	c.reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &policyStatusWriter{e.termWriter(ctx)})
	}
	return e.runWriter(c)
}

// policiesSharingTarget maps a policy to itself and to the policies that share
// its target and direction: whether a target is shared is in their status too.
func (e *enforcer) policiesSharingTarget(_ context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*v1alpha1.WorkloadNetworkPolicy)
	if !ok {
		return nil
	}
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(p)}}
	for _, other := range e.Policies(workload.Target(p.Namespace, p.Spec.TargetRef), p.Spec.Direction) {
		if other.Name != p.Name {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)})
		}
	}
	return reqs
}
