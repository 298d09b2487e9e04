package termwriter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/extensionref"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// Cluster is what a writer's controller asks of the enforcer extension: the
// shared cache, the client and recorder, and the count of reconciles. The
// enforcer extension provides it.
type Cluster interface {
	// Cache is the shared controller-runtime cache.
	Cache() cache.Cache
	// Client writes to the API server.
	Client() client.Client
	// Recorder records Kubernetes Events.
	Recorder() record.EventRecorder
	// Reconciled counts a reconcile of a controller, by result.
	Reconciled(ctx context.Context, controller string, err error)
}

// elector is what a writer's controller asks of the leader elector: its
// terms, and the withholding of the hand-off.
type elector interface {
	// SetCallBackFuncs registers onStartedLeading and onStoppedLeading
	// (either may be nil); when this replica leads already,
	// onStartedLeading starts now.
	SetCallBackFuncs(onStartedLeading func(ctx context.Context), onStoppedLeading func())
	// IsLeader reports whether this replica leads now.
	IsLeader() bool
	// Withhold tells the elector that the release of this term must not
	// hand the flow stream over.
	Withhold()
}

// Runner runs writers' controllers on the elector's terms, with the shared
// cache and client of the enforcer extension. It implements ProposalWriting
// and PolicyStatusSyncing.
type Runner struct {
	cluster Cluster
	elector elector
	logger  *zap.Logger
}

var (
	_ ProposalWriting     = (*Runner)(nil)
	_ PolicyStatusSyncing = (*Runner)(nil)
)

// Find returns a Runner on the enforcer extension enforcer and the leader
// elector leaderElector in host, for a writer's Start. It looks them up as
// the extensions' own Find does, with the same errors, through the
// interfaces that this package defines (Cluster, elector).
func Find(host component.Host, enforcer, leaderElector component.ID, logger *zap.Logger) (Writing, error) {
	cluster, err := extensionref.Find[Cluster](host, enforcer, "an enforcer extension")
	if err != nil {
		return nil, err
	}
	e, err := extensionref.Find[elector](host, leaderElector, "a leader elector")
	if err != nil {
		return nil, err
	}
	return &Runner{cluster: cluster, elector: e, logger: logger}, nil
}

// ProposalWorkers is how many proposals the proposal writer's controller
// writes side by side. Each write of a proposal is a read and one or two
// writes, one after the other: one at a time, their round trips bound the
// writer (about 30 writes a second at 20 ms each) below the write_qps that a
// large cluster needs; 8 reach some 250. The writer's own rate limit still
// bounds the writes, and its priorities still choose which go first.
const ProposalWorkers = 8

// WriteProposals runs the proposal writer as a controller on each term.
func (r *Runner) WriteProposals(watches []Watch, reconcile func(context.Context, types.NamespacedName, ProposalWriter) error,
	resync func(enqueue func(types.NamespacedName))) Queue {
	c := termcontroller.New("proposal-writer", watches, nil)
	c.Resync = resync
	c.Workers = ProposalWorkers
	c.Reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &proposalWriter{r.termWriter(ctx)})
	}
	return r.run(c)
}

// SyncPolicyStatus runs the status owner as a controller on each term.
func (r *Runner) SyncPolicyStatus(watches []Watch, reconcile func(context.Context, types.NamespacedName, PolicyStatusWriter) error) Queue {
	c := termcontroller.New("policy-status", watches, nil)
	c.Reconcile = func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, &policyStatusWriter{r.termWriter(ctx)})
	}
	return r.run(c)
}

// termWriter returns the base of the writers' clients for the term ctx.
func (r *Runner) termWriter(ctx context.Context) termWriter {
	return termWriter{term: ctx, client: r.cluster.Client(), reader: r.cluster.Cache(), recorder: r.cluster.Recorder()}
}

// run runs c on each term of leadership.
func (r *Runner) run(c *termcontroller.Controller) Queue {
	termcontroller.OnTerms(r.elector, termcontroller.Env{Logger: r.logger, Informers: r.cluster.Cache(), Reconciled: r.cluster.Reconciled}, c)
	return &queue{Controller: c, elector: r.elector, logger: r.logger}
}

// queue is a writer's controller as its writer sees it.
type queue struct {
	*termcontroller.Controller
	elector elector
	logger  *zap.Logger
}

// Stop ends the controller (termcontroller.Controller.Stop). On a leader
// whose writer did not write everything it held, it tells the elector to
// withhold the hand-off: the next leader then reads the flow source's
// backfill instead of resuming after what this one did not write.
func (q *queue) Stop(ctx context.Context, keys []types.NamespacedName) error {
	leading := q.elector.IsLeader()
	err := q.Controller.Stop(ctx, keys)
	if leading && !q.HandedOff() {
		q.logger.Warn("A writer did not write everything before the lease is given up: the next leader reads the flow source's backfill",
			zap.String("controller", q.Name()))
		q.elector.Withhold()
	}
	return err
}

// Writing runs the writers' controllers: a Runner in a collector, a fake in
// a writer's unit tests.
type Writing interface {
	ProposalWriting
	PolicyStatusSyncing
}

// Finder finds what runs a writer's controller in a collector's host, for
// the writer's Start: Find in the collector. A writer's factory takes it as
// its test seam.
type Finder func(host component.Host, enforcer, leaderElector component.ID, logger *zap.Logger) (Writing, error)

var _ Finder = Find
