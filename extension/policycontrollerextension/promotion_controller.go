package policycontrollerextension

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// promoter turns a proposal that a person labelled with the promote label into
// a WorkloadNetworkPolicy, hands the proposal's evidence (its observed edges)
// on to the policy's status, and deletes proposals that a promoted policy has
// replaced; it merges an amendment that a person labelled into the policy it
// amends. It records the policy's revision that each makes. It runs as a
// controller on each term of leadership, one proposal a reconcile, told of
// every change to a proposal or a policy of the same name.
type promoter struct {
	logger    *zap.Logger
	reader    client.Reader
	client    client.Client
	recorder  record.EventRecorder
	revisions *revisions
	queue     *termcontroller.Controller
	// now is the clock of the promoted-at annotation.
	now func() time.Time
}

// newPromotionController is the promoter on each term.
func newPromotionController(logger *zap.Logger, reader client.Reader, c client.Client, recorder record.EventRecorder,
	revs *revisions) *termcontroller.Controller {
	p := &promoter{logger: logger, reader: reader, client: c, recorder: recorder, revisions: revs, now: time.Now}
	p.queue = termcontroller.New("promotion",
		[]termcontroller.Watch{{Object: &v1alpha1.WorkloadNetworkPolicyProposal{}}, {Object: &v1alpha1.WorkloadNetworkPolicy{}}},
		func(ctx context.Context, key types.NamespacedName) error {
			var proposal v1alpha1.WorkloadNetworkPolicyProposal
			if err := p.reader.Get(ctx, key, &proposal); err != nil {
				return client.IgnoreNotFound(err)
			}
			return p.reconcile(ctx, &proposal)
		})
	return p.queue
}

// reconcile handles one proposal: a promoted one becomes a policy and goes; one
// that a promoted policy of its name already replaced goes as a leftover; a
// policy made by hand under the same name leaves the proposal alone. An
// amendment is never any of these: a promoted one is merged into the policy
// that it amends, and goes.
func (p *promoter) reconcile(ctx context.Context, proposal *v1alpha1.WorkloadNetworkPolicyProposal) error {
	if ref, amendment := amends(proposal); amendment {
		return p.promoteAmendment(ctx, proposal, ref)
	}
	nn := types.NamespacedName{Namespace: proposal.Namespace, Name: proposal.Name}
	var policy v1alpha1.WorkloadNetworkPolicy
	err := p.reader.Get(ctx, nn, &policy) // the cache: a policy created since is a change we are told of
	switch {
	case err == nil:
		if policy.Labels[v1alpha1.PromotedFromLabel] != proposal.Name {
			return nil // made by hand: the proposal is not its leftover
		}
		if err := p.handOnEvidence(ctx, proposal); err != nil {
			return err
		}
		return p.delete(ctx, proposal, "leftover of a promoted policy")
	case !apierrors.IsNotFound(err):
		return err
	}
	mode := v1alpha1.PolicyMode(proposal.Labels[v1alpha1.PromoteLabel])
	if mode != v1alpha1.PolicyModeMonitor && mode != v1alpha1.PolicyModeProtect {
		return nil // not promoted (the admission policy refuses other values)
	}
	// What the render subcommand and the review page render a proposal as,
	// with its first revision's cause and number.
	policy = *render.PromotedPolicy(proposal, mode)
	setCause(&policy, causePromoted(proposal.Name)) // generation 1
	policy.Annotations[v1alpha1.RevisionAnnotation] = "1"
	policy.Annotations[v1alpha1.PromotedAtAnnotation] = p.promotedAt()
	if err := p.client.Create(ctx, &policy); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache was behind; the policy's add event brings the proposal back as a leftover
		}
		if apiwrite.IsRefused(err) {
			p.recorder.Eventf(proposal, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused,
				"could not create the policy %s: %v", policy.Name, err)
		}
		return err
	}
	p.logger.Info("Promoted a proposal", zap.String("namespace", policy.Namespace), zap.String("name", policy.Name),
		zap.String("mode", string(mode)))
	p.recorder.Eventf(&policy, corev1.EventTypeNormal, v1alpha1.EventReasonPromoted,
		"promoted from proposal %s in %s mode", proposal.Name, mode)
	// Revision 1. Should it fail, the revision recorder records it from the
	// policy's annotations; the proposal goes all the same.
	recErr := p.record(ctx, &policy)
	if err := p.handOnEvidence(ctx, proposal); err != nil {
		return err // the next round finds the policy, and hands on again
	}
	return errors.Join(recErr, p.delete(ctx, proposal, "promoted"))
}

// record records the revision that the promoter's write of policy made. A
// change of the policy since is not this round's to record: the revision
// recorder, told of that change, records it.
func (p *promoter) record(ctx context.Context, policy *v1alpha1.WorkloadNetworkPolicy) error {
	_, err := p.revisions.record(ctx, policy)
	if errors.Is(err, errPolicyChanged) || apierrors.IsNotFound(err) {
		return nil // changed or gone since: nothing of this round's to record
	}
	return err
}

// promotedAt is the promoted-at annotation's value for now: RFC 3339, UTC.
func (p *promoter) promotedAt() string { return p.now().UTC().Format(time.RFC3339) }

// amends reports whether proposal is an amendment, and returns its owner
// reference to the WorkloadNetworkPolicy that it amends; nil for a proposal
// that carries the amends label without one, which has nothing to be merged
// into and is never promoted.
func amends(proposal *v1alpha1.WorkloadNetworkPolicyProposal) (*metav1.OwnerReference, bool) {
	for i, ref := range proposal.OwnerReferences {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == v1alpha1.GroupVersion.Group &&
			ref.Kind == "WorkloadNetworkPolicy" {
			return &proposal.OwnerReferences[i], true
		}
	}
	_, labelled := proposal.Labels[v1alpha1.AmendsLabel]
	return nil, labelled
}

// promoteAmendment merges an amendment that a person labelled for promotion
// into the policy that it amends, when the policy's spec is still the one
// that the amendment was built on (its generation is the amends-generation
// annotation): the amendment's spec becomes the policy's rules, the label's
// mode its mode, with the change-cause "amendment <name>" and promoted-at
// now, in one write; then the amendment goes, and the policy's new revision
// is recorded. A policy changed since (by hand, by a rollback, by another
// amendment) is never overwritten: a Warning Event Stale on the amendment
// says so, and the amendment stays for its writer to build again on the
// policy as it is.
func (p *promoter) promoteAmendment(ctx context.Context, amendment *v1alpha1.WorkloadNetworkPolicyProposal, ref *metav1.OwnerReference) error {
	mode := v1alpha1.PolicyMode(amendment.Labels[v1alpha1.PromoteLabel])
	if ref == nil || (mode != v1alpha1.PolicyModeMonitor && mode != v1alpha1.PolicyModeProtect) {
		return nil
	}
	key := types.NamespacedName{Namespace: amendment.Namespace, Name: ref.Name}
	built, parseErr := strconv.ParseInt(amendment.Annotations[v1alpha1.AmendsGenerationAnnotation], 10, 64)
	var policy v1alpha1.WorkloadNetworkPolicy
	for _, reader := range []client.Reader{p.reader, p.client} { // the API server's copy when the cache's is not the one
		if err := reader.Get(ctx, key, &policy); err != nil {
			// A policy that is gone takes its amendments with it.
			return client.IgnoreNotFound(err)
		}
		if policy.UID != ref.UID {
			return nil // an earlier policy's amendment, which goes with it
		}
		if merged(&policy, amendment, built) {
			return p.delete(ctx, amendment, "amendment merged")
		}
		if parseErr == nil && built == policy.Generation {
			break
		}
		if reader == p.client {
			p.recorder.Eventf(amendment, corev1.EventTypeWarning, v1alpha1.ReasonStale,
				"not merged: the policy %s is at generation %d, and this amendment was built on generation %q; its writer builds it again on the policy as it is",
				policy.Name, policy.Generation, amendment.Annotations[v1alpha1.AmendsGenerationAnnotation])
			return nil
		}
	}
	// The spec, its cause and promoted-at in one write, on condition that
	// the policy is still the one, at the generation, that was checked.
	spec := v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: *amendment.Spec.DeepCopy(), Mode: mode}
	set := causeAnnotations(&policy, causeAmendment(amendment.Name))
	set[v1alpha1.PromotedAtAnnotation] = p.promotedAt()
	err := patchPolicy(ctx, p.client, &policy, []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: ref.UID},
		{Op: "replace", Path: "/spec", Value: spec},
	}, set)
	switch {
	case errors.Is(err, errPolicyChanged):
		// Not a failure: the next round looks at the policy as it is now.
		p.queue.Enqueue(client.ObjectKeyFromObject(amendment), 0)
		return nil
	case apiwrite.IsRefused(err):
		p.recorder.Eventf(amendment, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused,
			"could not merge into the policy %s: %v", policy.Name, err)
		return err
	case err != nil:
		return err
	}
	p.logger.Info("Merged an amendment", zap.String("namespace", policy.Namespace), zap.String("name", policy.Name),
		zap.String("amendment", amendment.Name), zap.String("mode", string(mode)))
	p.recorder.Eventf(&policy, corev1.EventTypeNormal, v1alpha1.EventReasonPromoted,
		"merged amendment %s in %s mode", amendment.Name, mode)
	// Should recording fail, the revision recorder records the revision from
	// the policy's annotations (a change since: as that change says).
	deleteErr := p.delete(ctx, amendment, "amendment merged")
	return errors.Join(deleteErr, p.record(ctx, &policy))
}

// merged reports whether amendment, built on generation built, was merged
// into policy already and only its deletion is left: the policy's current
// generation is the one that the merge made, with the amendment's cause.
func merged(policy *v1alpha1.WorkloadNetworkPolicy, amendment *v1alpha1.WorkloadNetworkPolicyProposal, built int64) bool {
	return policy.Annotations[v1alpha1.ChangeCauseAnnotation] == causeAmendment(amendment.Name) &&
		policy.Annotations[ChangeCauseGenerationAnnotation] == strconv.FormatInt(policy.Generation, 10) &&
		built+1 == policy.Generation
}

// handOnEvidence writes the proposal's observed edges into its policy's
// status, through the one way every writer of a policy's status writes, unless
// the status owner has already judged the policy's own (its WouldBlock
// condition): then its first judgement took them on from the proposal, which
// is still there until this hand-off is done.
func (p *promoter) handOnEvidence(ctx context.Context, proposal *v1alpha1.WorkloadNetworkPolicyProposal) error {
	if len(proposal.Status.Observed) == 0 && proposal.Status.OmittedEdges == 0 {
		return nil
	}
	// The API server's copy: the cache may not hold the policy just created.
	_, err := apiwrite.UpdatePolicyStatus(ctx, p.client, p.client, client.ObjectKeyFromObject(proposal), apiwrite.PromotionManager,
		func(policy *v1alpha1.WorkloadNetworkPolicy) bool {
			if meta.FindStatusCondition(policy.Status.Conditions, v1alpha1.ConditionWouldBlock) != nil ||
				len(policy.Status.Observed) > 0 {
				return false
			}
			policy.Status.ObservedTraffic = *proposal.Status.ObservedTraffic.DeepCopy()
			return true
		})
	if err != nil && apiwrite.IsRefused(err) {
		p.recorder.Eventf(proposal, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused,
			"could not hand the observed edges on to the policy %s: %v", proposal.Name, err)
	}
	return err
}

func (p *promoter) delete(ctx context.Context, proposal *v1alpha1.WorkloadNetworkPolicyProposal, why string) error {
	// The UID precondition keeps a proposal that was deleted and made again in
	// the meantime from going unseen.
	err := p.client.Delete(ctx, proposal, client.Preconditions{UID: &proposal.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.logger.Debug("Deleted a proposal", zap.String("namespace", proposal.Namespace), zap.String("name", proposal.Name),
		zap.String("why", why))
	return nil
}
