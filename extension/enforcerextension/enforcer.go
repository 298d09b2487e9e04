package enforcerextension

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// cacheSyncTimeout bounds the wait for the shared cache at start: a collector
// that cannot list the cluster cannot resolve a flow, and should say so.
const cacheSyncTimeout = 2 * time.Minute

// enforcer is the extension: the shared cache, the API client and leadership.
type enforcer struct {
	*resolver
	*leadership

	cfg       *Config
	set       extension.Settings
	telemetry *telemetry
	// membership shares the flow sources' keys among the replicas.
	membership *membership

	// restConfig is the test seam: it builds the API server configuration.
	restConfig func(k8sconfig.APIConfig) (*rest.Config, error)

	client client.Client
	cache  cache.Cache
	// events records Kubernetes Events for the controllers; recorder is its
	// recorder, which the writers' clients share.
	events   record.EventBroadcaster
	recorder record.EventRecorder
	// promotion is the promotion controller, whose rounds tests count.
	promotion *termController
	// writerControllers are the controllers of the writers of flows' effects
	// (proposals, policy status), which a hand-off drains.
	writersMu         sync.Mutex
	writerControllers []*termController
	// served is which optional native kinds (AuthorizationPolicies,
	// CiliumNetworkPolicies) the cluster served at start, and so whether
	// they are watched and rendered.
	served servedKinds

	cancel context.CancelFunc
	done   chan struct{}
}

// The enforcer offers every interface of the extension.
var (
	_ workload.Resolver   = (*enforcer)(nil)
	_ workload.Labeler    = (*enforcer)(nil)
	_ Placement           = (*enforcer)(nil)
	_ PolicyReader        = (*enforcer)(nil)
	_ Lister              = (*enforcer)(nil)
	_ Renderer            = (*enforcer)(nil)
	_ Selectors           = (*enforcer)(nil)
	_ Leadership          = (*enforcer)(nil)
	_ ProposalWriting     = (*enforcer)(nil)
	_ PolicyStatusSyncing = (*enforcer)(nil)
	_ Membership          = (*enforcer)(nil)
	_ LeaderLocator       = (*enforcer)(nil)
)

func newEnforcer(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error)) *enforcer {
	return newReplica(set, cfg, rc, replicaName())
}

// newReplica is newEnforcer for the replica whose pod has that name.
func newReplica(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error), replica string) *enforcer {
	identity := newIdentity(replica)
	m := newMembership(set.Logger, cfg.LeaderElection, replica, identity)
	return &enforcer{
		cfg: cfg, set: set, restConfig: rc,
		// The leader reads no key while another member can.
		leadership: &leadership{logger: set.Logger, cfg: cfg.LeaderElection, identity: identity, onNewLeader: m.setLeader},
		membership: m,
	}
}

// Start connects to the API server, fills the shared cache and then competes for
// the lease.
func (e *enforcer) Start(ctx context.Context, _ component.Host) error {
	routeKubernetesLogs(e.set.Logger)
	tel, err := newTelemetry(e.set.TelemetrySettings)
	if err != nil {
		return err
	}
	e.telemetry, e.leadership.telemetry = tel, tel
	e.membership.mu.Lock()
	e.membership.telemetry = tel
	e.membership.mu.Unlock()
	rc, err := e.restConfig(e.cfg.APIConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client (auth_type %s): %w", e.cfg.AuthType, err)
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "network-enforcer"
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	if e.client, err = client.New(rc, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if e.served, err = discoverKinds(cs.Discovery()); err != nil {
		return err
	}
	if !e.served.ciliumNetworkPolicies {
		e.set.Logger.Info("The cluster does not serve CiliumNetworkPolicies (no Cilium): policies of the cilium backend are not rendered",
			zap.String("resource", ciliumNetworkPolicyResource.String()))
	}
	if !e.served.authorizationPolicies {
		e.set.Logger.Info("The cluster does not serve AuthorizationPolicies (no Istio): policies of the istio backend are not rendered",
			zap.String("resource", authorizationPolicyResource.String()))
	}
	if e.cache, err = newCache(rc, scheme); err != nil {
		return err
	}
	st, err := newStores(cs)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	if err := addIndexes(runCtx, e.cache); err != nil {
		cancel()
		return err
	}
	for _, obj := range cachedTypes(e.served) {
		if _, err := e.cache.GetInformer(runCtx, obj); err != nil {
			cancel()
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	go func() {
		defer close(e.done)
		if err := e.cache.Start(runCtx); err != nil {
			e.set.Logger.Error("The shared cache stopped", zap.Error(err))
		}
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer syncCancel()
	err = st.start(runCtx, syncCtx)
	if err == nil && !e.cache.WaitForCacheSync(syncCtx) {
		err = errors.New("proposals and policies did not sync")
	}
	if err != nil {
		cancel()
		<-e.done
		return fmt.Errorf("the shared cache did not sync (%w): is the API server reachable, and may the service account list and watch pods, workloads, namespaces, proposals, policies and the policy objects it renders?", err)
	}
	e.resolver = &resolver{stores: st, reader: e.cache}
	e.membership.attach(runCtx, cs, st.pod)
	e.events = record.NewBroadcaster(record.WithContext(runCtx))
	e.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	e.recorder = e.events.NewRecorder(scheme, corev1.EventSource{Component: eventComponent})
	e.promotion = e.runController(e.promotionController())
	e.runController(e.renderController())
	return e.leadership.run(runCtx, cs)
}

// Shutdown gives the lease up, so that a standby takes over at once, and stops
// the cache. A leader first writes what its writers hold, and hands the flow
// stream over with the lease.
func (e *enforcer) Shutdown(ctx context.Context) error {
	if e.cancel != nil {
		// The membership Lease goes first, so that the others take this
		// replica's keys at once; with a bound, as the leader Lease.
		mctx, mcancel := context.WithTimeout(ctx, releaseTimeout)
		e.membership.stop(mctx, true)
		mcancel()
		if e.IsLeader() {
			e.handOver(ctx)
		}
		e.cancel()
		<-e.done
		// The lease goes with a bound: a shutdown that the API server holds
		// up leaves it to expire instead.
		rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
		e.leadership.released(rctx)
		cancel()
		if e.resolver != nil {
			e.resolver.stores.factory.Shutdown()
		}
		if e.events != nil {
			e.events.Shutdown()
		}
	}
	return nil
}

// releaseTimeout bounds how long a shutdown waits for the lease's release.
const releaseTimeout = 5 * time.Second

// eventComponent is the source of the Events that the enforcer records.
const eventComponent = "network-enforcer"

// writers returns the controllers of the writers.
func (e *enforcer) writers() []*termController {
	e.writersMu.Lock()
	defer e.writersMu.Unlock()
	return append([]*termController(nil), e.writerControllers...)
}

// runWriter runs c on each term, as a writer that a hand-off drains.
func (e *enforcer) runWriter(c *termController) *termController {
	e.writersMu.Lock()
	e.writerControllers = append(e.writerControllers, c)
	e.writersMu.Unlock()
	return e.runController(c)
}

// runController runs c on each term of leadership.
func (e *enforcer) runController(c *termController) *termController {
	e.OnLeading(func(ctx context.Context) { c.run(ctx, e) })
	return c
}

// termWriter returns the base of the writers' clients for the term ctx.
func (e *enforcer) termWriter(ctx context.Context) termWriter {
	return termWriter{term: ctx, client: e.client, reader: e.cache, recorder: e.recorder}
}

// Proposal reads a proposal from the shared cache.
func (e *enforcer) Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool) {
	var p v1alpha1.WorkloadNetworkPolicyProposal
	if err := e.cache.Get(context.Background(), key, &p); err != nil {
		return nil, false
	}
	return &p, true
}

// Policy reads a policy from the shared cache.
func (e *enforcer) Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool) {
	var p v1alpha1.WorkloadNetworkPolicy
	if err := e.cache.Get(context.Background(), key, &p); err != nil {
		return nil, false
	}
	return &p, true
}

// DataPlane is the data plane that enforces the rendered objects, as
// data_plane configures it: the judges of previews and monitor verdicts judge
// as it does.
func (e *enforcer) DataPlane() netpolmatch.DataPlane { return e.cfg.DataPlane }
