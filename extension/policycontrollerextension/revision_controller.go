package policycontrollerextension

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// revisionRecorder keeps each policy's revisions (revisions): it records the
// policy's spec as a new revision whenever it differs from the newest one,
// and rolls a policy back to the revision that a person names in its
// rollback-to annotation. It runs as a controller on each term of
// leadership, one policy a reconcile, told of every change to a policy's
// spec or annotations, and of every policy at the start of a term.
type revisionRecorder struct {
	logger    *zap.Logger
	client    client.Client
	recorder  record.EventRecorder
	revisions *revisions
	queue     *termcontroller.Controller
}

// newRevisionController is the revision recorder on each term.
func newRevisionController(logger *zap.Logger, c client.Client, recorder record.EventRecorder, revs *revisions) *termcontroller.Controller {
	r := &revisionRecorder{logger: logger, client: c, recorder: recorder, revisions: revs}
	r.queue = termcontroller.New("revision",
		[]termcontroller.Watch{{Object: &v1alpha1.WorkloadNetworkPolicy{},
			Predicates: []predicate.Predicate{predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})}}},
		func(ctx context.Context, key types.NamespacedName) error {
			// The API server's copy: a spec that the cache has not caught up
			// with must never be recorded as the newest.
			var p v1alpha1.WorkloadNetworkPolicy
			if err := r.client.Get(ctx, key, &p); err != nil {
				// A policy that is gone takes its revisions with it (the
				// owner references).
				return client.IgnoreNotFound(err)
			}
			err := r.reconcile(ctx, &p)
			switch {
			case errors.Is(err, errPolicyChanged):
				// Not a failure: the policy changed under the round, which
				// looks again at it as it is now.
				r.queue.Enqueue(key, 0)
				return nil
			case apierrors.IsNotFound(err):
				return nil // the policy went during the round
			}
			return err
		})
	return r.queue
}

// reconcile records the policy's spec, and rolls it back when asked.
func (r *revisionRecorder) reconcile(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	// The spec as it is goes into the history first: a change made by hand
	// just before a rollback is kept.
	current, err := r.revisions.record(ctx, p)
	if err != nil {
		return err
	}
	to, asked := p.Annotations[v1alpha1.RollbackToAnnotation]
	if !asked {
		return nil
	}
	return r.rollback(ctx, p, current, to)
}

// errRollbackFailed marks a rollback that cannot be done as asked: it is
// reported on the policy and not retried.
var errRollbackFailed = errors.New("rollback failed")

// rollback restores the rules (spec.PolicySpec) of the revision that the
// rollback-to annotation names, keeping the policy's mode, and records them
// as a new revision, with the cause "rollback to revision <n>"; the
// annotation goes in the same write. A rollback that cannot be done (no
// revision number, a revision not kept, a spec that the API server refuses)
// removes the annotation, records a Warning Event RollbackFailed on the
// policy and ends the reconcile with a terminal error, which the reconcile
// metric counts with result error and which is not retried: the annotation
// is a person's request, and a new one asks again.
func (r *revisionRecorder) rollback(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, current revision, to string) error {
	n, err := strconv.ParseInt(to, 10, 64)
	if err != nil || n < 1 {
		return r.rollbackFailed(ctx, p, fmt.Sprintf("%s %q is not a revision number", v1alpha1.RollbackToAnnotation, to))
	}
	own, _, err := r.revisions.list(ctx, p)
	if err != nil {
		return err
	}
	var target *revision
	for i := range own {
		if own[i].obj.Revision == n {
			target = &own[i]
		}
	}
	if target == nil {
		return r.rollbackFailed(ctx, p, fmt.Sprintf("revision %d is not kept (kept: %s)", n, keptRevisions(own)))
	}

	want := p.Spec.DeepCopy()
	want.PolicySpec = *target.spec.PolicySpec.DeepCopy()
	if sameSpec(want, &p.Spec) {
		if err := r.dropRollbackTo(ctx, p); err != nil {
			return err
		}
		r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.ReasonRolledBack,
			"the rules are already those of revision %d (revision %d); nothing to roll back", n, current.obj.Revision)
		return nil
	}
	// The spec, its cause, and the request's removal in one write, on the
	// generation that was just recorded: a change since is recorded first
	// by the next round.
	err = patchPolicy(ctx, r.client, p, []jsonPatchOp{{Op: "replace", Path: "/spec", Value: want}},
		causeAnnotations(p, causeRollback(n)), v1alpha1.RollbackToAnnotation)
	if apiwrite.IsRefused(err) {
		return r.rollbackFailed(ctx, p, fmt.Sprintf("the API server refused the rules of revision %d: %v", n, err))
	}
	if err != nil {
		return err
	}
	r.logger.Info("Rolled a policy back", zap.String("namespace", p.Namespace), zap.String("name", p.Name),
		zap.Int64("to", n))
	r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.ReasonRolledBack,
		"restored the rules of revision %d, in %s mode still", n, p.Spec.Mode)
	// Should this fail, the next round records it, with the cause that the
	// policy carries.
	_, err = r.revisions.record(ctx, p)
	return err
}

// rollbackFailed removes the rollback-to annotation, records why on the
// policy, and returns the terminal error that the reconcile ends with.
func (r *revisionRecorder) rollbackFailed(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, why string) error {
	if err := r.dropRollbackTo(ctx, p); err != nil {
		return err
	}
	r.recorder.Eventf(p, corev1.EventTypeWarning, v1alpha1.ReasonRollbackFailed, "%s", why)
	r.logger.Info("Could not roll a policy back", zap.String("namespace", p.Namespace), zap.String("name", p.Name),
		zap.String("why", why))
	return reconcile.TerminalError(fmt.Errorf("%w: %s/%s: %s", errRollbackFailed, p.Namespace, p.Name, why))
}

// dropRollbackTo removes the rollback-to annotation, on condition that it
// still says what was read: a newer request made meanwhile is not lost.
func (r *revisionRecorder) dropRollbackTo(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) error {
	return patchPolicy(ctx, r.client, p, nil, nil, v1alpha1.RollbackToAnnotation)
}

// keptRevisions says which revisions are kept, for a rollback's refusal.
func keptRevisions(own []revision) string {
	switch len(own) {
	case 0:
		return "none"
	case 1:
		return strconv.FormatInt(own[0].obj.Revision, 10)
	}
	return fmt.Sprintf("%d to %d", own[0].obj.Revision, own[len(own)-1].obj.Revision)
}
