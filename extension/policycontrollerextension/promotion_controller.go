package policycontrollerextension

import (
	"context"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
// replaced. It runs as a controller on each term of leadership, one proposal a
// reconcile, told of every change to a proposal or a policy of the same name.
type promoter struct {
	logger   *zap.Logger
	reader   client.Reader
	client   client.Client
	recorder record.EventRecorder
	queue    *termcontroller.Controller
}

// newPromotionController is the promoter on each term.
func newPromotionController(logger *zap.Logger, reader client.Reader, c client.Client, recorder record.EventRecorder) *termcontroller.Controller {
	p := &promoter{logger: logger, reader: reader, client: c, recorder: recorder}
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
// policy made by hand under the same name leaves the proposal alone.
func (p *promoter) reconcile(ctx context.Context, proposal *v1alpha1.WorkloadNetworkPolicyProposal) error {
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
	// What the render subcommand and the review page render a proposal as.
	policy = *render.PromotedPolicy(proposal, mode)
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
	if err := p.handOnEvidence(ctx, proposal); err != nil {
		return err // the next round finds the policy, and hands on again
	}
	return p.delete(ctx, proposal, "promoted")
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
