package enforcerextension

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// The writers of flows' effects run their reconcile functions, which live in
// their components (the proposal writer in k8swriterexporter, the status owner
// in violationprocessor), as controllers that the extension hosts on each
// term of leadership, so that a hand-off can drain them.

// WriteProposals runs the proposal writer as a controller on each term.
func (e *enforcer) WriteProposals(watches []Watch, reconcile func(context.Context, types.NamespacedName, ProposalWriter) error,
	resync func(enqueue func(types.NamespacedName))) Queue {
	c := &termController{name: "proposal-writer", resync: resync, watches: watches}
	c.reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &proposalWriter{e.termWriter(ctx)})
	}
	return e.runWriter(c)
}

// SyncPolicyStatus runs the status owner as a controller on each term.
func (e *enforcer) SyncPolicyStatus(watches []Watch, reconcile func(context.Context, types.NamespacedName, PolicyStatusWriter) error) Queue {
	c := &termController{name: "policy-status", watches: watches}
	c.reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &policyStatusWriter{e.termWriter(ctx)})
	}
	return e.runWriter(c)
}
