package enforcerextension

import (
	"context"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// promoteResync is how often the promotion reconciler looks at every proposal,
// besides the changes it is told of.
const promoteResync = 30 * time.Second

// promoter turns a proposal that a person labelled with the promote label into
// a WorkloadNetworkPolicy, and deletes proposals that a promoted policy has
// replaced. It runs on the leader only.
type promoter struct {
	logger *zap.Logger
	reader client.Reader
	client client.Client
	kick   chan struct{}
	// render renders the policies in the same rounds.
	render *renderer
}

// handlerAdder is an informer that takes event handlers.
type handlerAdder interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// watch asks for a round whenever a proposal, a policy or a rendered object
// changes: a change to a rendered object may be drift to revert.
func (p *promoter) watch(informers ...handlerAdder) error {
	kick := func(any) {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: kick, UpdateFunc: func(_, o any) { kick(o) }, DeleteFunc: kick,
		}); err != nil {
			return err
		}
	}
	return nil
}

// run reconciles every proposal and renders every policy on each change and
// every promoteResync, until ctx (this term of leadership) ends.
func (p *promoter) run(ctx context.Context) {
	resync := time.NewTicker(promoteResync)
	defer resync.Stop()
	for {
		p.reconcileAll(ctx)
		if p.render != nil {
			p.render.reconcileAll(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-resync.C:
		}
	}
}

func (p *promoter) reconcileAll(ctx context.Context) {
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	if err := p.reader.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		if ctx.Err() != nil {
			return
		}
		if err := p.reconcile(ctx, &list.Items[i]); err != nil {
			p.logger.Warn("Could not reconcile a proposal; retrying", zap.String("namespace", list.Items[i].Namespace),
				zap.String("name", list.Items[i].Name), zap.Error(err))
		}
	}
}

// reconcile handles one proposal: a promoted one becomes a policy and goes; one
// that a promoted policy of its name already replaced goes as a leftover; a
// policy made by hand under the same name leaves the proposal alone.
func (p *promoter) reconcile(ctx context.Context, proposal *v1alpha1.WorkloadNetworkPolicyProposal) error {
	nn := types.NamespacedName{Namespace: proposal.Namespace, Name: proposal.Name}
	var policy v1alpha1.WorkloadNetworkPolicy
	err := p.reader.Get(ctx, nn, &policy) // the cache: a round looks at every proposal
	switch {
	case err == nil:
		if policy.Labels[v1alpha1.PromotedFromLabel] != proposal.Name {
			return nil // made by hand: the proposal is not its leftover
		}
		return p.delete(ctx, proposal, "leftover of a promoted policy")
	case !apierrors.IsNotFound(err):
		return err
	}
	mode := v1alpha1.PolicyMode(proposal.Labels[v1alpha1.PromoteLabel])
	if mode != v1alpha1.PolicyModeMonitor && mode != v1alpha1.PolicyModeProtect {
		return nil // not promoted (the admission policy refuses other values)
	}
	policy = v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: proposal.Namespace, Name: proposal.Name,
			Labels: map[string]string{v1alpha1.PromotedFromLabel: proposal.Name},
		},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: *proposal.Spec.DeepCopy(), Mode: mode},
	}
	if err := p.client.Create(ctx, &policy); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	p.logger.Info("Promoted a proposal", zap.String("namespace", policy.Namespace), zap.String("name", policy.Name),
		zap.String("mode", string(mode)))
	return p.delete(ctx, proposal, "promoted")
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
