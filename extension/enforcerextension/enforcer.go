package enforcerextension

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cacheSyncTimeout bounds the wait for the shared cache at start: a collector
// that cannot list the cluster cannot resolve a flow, and should say so.
const cacheSyncTimeout = 2 * time.Minute

// enforcer is the extension: the shared cache, the API client and leadership.
type enforcer struct {
	*resolver
	*leadership

	cfg *Config
	set extension.Settings

	// restConfig is the test seam: it builds the API server configuration.
	restConfig func(AuthType) (*rest.Config, error)

	client client.Client
	cache  cache.Cache
	// authorizationPolicies is whether the cluster served AuthorizationPolicies
	// at start, and so whether they are watched and rendered.
	authorizationPolicies bool

	cancel context.CancelFunc
	done   chan struct{}
}

var _ Enforcer = (*enforcer)(nil)

func newEnforcer(set extension.Settings, cfg *Config, rc func(AuthType) (*rest.Config, error)) *enforcer {
	return &enforcer{
		cfg: cfg, set: set, restConfig: rc,
		leadership: &leadership{logger: set.Logger, cfg: cfg.LeaderElection},
	}
}

// Start connects to the API server, fills the shared cache and then competes for
// the lease.
func (e *enforcer) Start(ctx context.Context, _ component.Host) error {
	routeKubernetesLogs(e.set.Logger)
	rc, err := e.restConfig(e.cfg.AuthType)
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
	if e.authorizationPolicies, err = servesResource(cs.Discovery(), authorizationPolicyResource); err != nil {
		return err
	}
	if !e.authorizationPolicies {
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
	for _, obj := range cachedTypes(e.authorizationPolicies) {
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
	if err := e.startPromoter(runCtx); err != nil {
		cancel()
		<-e.done
		return err
	}
	return e.leadership.run(runCtx, cs)
}

// Shutdown gives the lease up, so that a standby takes over at once, and stops
// the cache.
func (e *enforcer) Shutdown(context.Context) error {
	if e.cancel != nil {
		e.cancel()
		<-e.done
		if e.resolver != nil {
			e.resolver.stores.factory.Shutdown()
		}
	}
	return nil
}

// Reader reads from the shared cache.
func (e *enforcer) Reader() client.Reader { return e.cache }

// Client writes to the API server.
func (e *enforcer) Client() client.Client { return e.client }

// startPromoter runs the promotion and rendering reconcilers whenever this
// replica leads. A change to any cached object, a rendered one included (drift),
// asks them for a round.
func (e *enforcer) startPromoter(ctx context.Context) error {
	p := &promoter{logger: e.set.Logger, reader: e.cache, client: e.client, kick: make(chan struct{}, 1),
		render: &renderer{logger: e.set.Logger, reader: e.cache, client: e.client, authorizationPolicies: e.authorizationPolicies}}
	var informers []handlerAdder
	for _, obj := range cachedTypes(e.authorizationPolicies) {
		inf, err := e.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		informers = append(informers, inf)
	}
	if err := p.watch(informers...); err != nil {
		return err
	}
	e.OnLeading(p.run)
	return nil
}
