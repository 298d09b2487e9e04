package policycontrollerextension

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// Renderer renders a proposal as the native object of the policy that its
// promotion would create, as the render controller creates it, with the
// cluster's addresses from the shared cache: the review page's native objects.
type Renderer interface {
	// RenderProposal returns the native object of proposal promoted in mode.
	RenderProposal(proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) (render.Native, error)
}

// policyController is the extension: the promotion, revision and render
// controllers, registered with the leader elector at Start and ended at
// Shutdown.
type policyController struct {
	cfg *Config
	set extension.Settings

	cluster enforcerextension.Cluster
	// promotion and revision are the promotion controller and the revision
	// recorder, whose rounds tests count.
	promotion   *termcontroller.Controller
	revision    *termcontroller.Controller
	controllers []*termcontroller.Controller
}

var (
	_ Renderer                        = (*policyController)(nil)
	_ extensioncapabilities.Dependent = (*policyController)(nil)
)

func newPolicyController(set extension.Settings, cfg *Config) *policyController {
	return &policyController{cfg: cfg, set: set}
}

// Dependencies makes the collector start the enforcer extension (the shared
// cache) and the leader elector first, and shut them down after this one.
func (p *policyController) Dependencies() []component.ID {
	return []component.ID{p.cfg.Enforcer, p.cfg.LeaderElector}
}

// Start builds the controllers and has the elector run them on each term.
func (p *policyController) Start(_ context.Context, host component.Host) error {
	cluster, err := enforcerextension.Find[enforcerextension.Cluster](host, p.cfg.Enforcer)
	if err != nil {
		return err
	}
	elector, err := leaderelectorextension.Find[leaderelectorextension.LeaderElection](host, p.cfg.LeaderElector)
	if err != nil {
		return err
	}
	p.cluster = cluster
	revs := &revisions{logger: p.set.Logger, client: cluster.Client(), limit: p.cfg.RevisionHistoryLimit}
	p.promotion = newPromotionController(p.set.Logger, cluster.Cache(), cluster.Client(), cluster.Recorder(), revs)
	p.revision = newRevisionController(p.set.Logger, cluster.Client(), cluster.Recorder(), revs)
	p.controllers = []*termcontroller.Controller{
		p.promotion,
		p.revision,
		render.NewController(p.set.Logger, cluster.Cache(), cluster.Client(), cluster.Recorder(), cluster.Served()),
	}
	termcontroller.OnTerms(elector, termcontroller.Env{Logger: p.set.Logger, Informers: cluster.Cache(), Reconciled: cluster.Reconciled},
		p.controllers...)
	return nil
}

// Shutdown ends the controllers for good: a reconcile under way finishes,
// and no later term starts them again. They hold nothing unwritten: what
// they act on is in the cluster, and the next leader acts on it.
func (p *policyController) Shutdown(ctx context.Context) error {
	var errs []error
	for _, c := range p.controllers {
		errs = append(errs, c.Stop(ctx, nil))
	}
	return errors.Join(errs...)
}

// RenderProposal renders proposal promoted in mode (render.RenderProposal),
// with the addresses of spec.outside's entities from the shared cache.
func (p *policyController) RenderProposal(proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) (render.Native, error) {
	return render.RenderProposal(context.Background(), p.cluster.Cache(), proposal, mode)
}
