package enforcerextension

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
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
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/membership"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// cacheSyncTimeout bounds the wait for the shared cache at start: a collector
// that cannot list the cluster cannot resolve a flow, and should say so.
const cacheSyncTimeout = 2 * time.Minute

// enforcer is the extension: the shared cache and the API client, workload
// resolution, and the host of the membership (internal/membership).
type enforcer struct {
	*resolver

	cfg       *Config
	set       extension.Settings
	telemetry *telemetry
	// elector is the leader elector that the config names; found at Start.
	elector leaderelectorextension.Lease
	// membership shares the flow sources' keys among the replicas; made at
	// Start, with the elector's identity.
	membership *membership.Membership

	// restConfig is the test seam: it builds the API server configuration.
	restConfig func(k8sconfig.APIConfig) (*rest.Config, error)

	client client.Client
	cache  cache.Cache
	// events records Kubernetes Events for the controllers; recorder is its
	// recorder, which the writers' clients share.
	events   record.EventBroadcaster
	recorder record.EventRecorder
	// served is which optional native kinds (AuthorizationPolicies,
	// CiliumNetworkPolicies) the cluster served at start, and so whether
	// they are watched and rendered.
	served render.ServedKinds

	cancel context.CancelFunc
	done   chan struct{}
}

// The enforcer offers every interface of the extension.
var (
	_ workload.Resolver  = (*enforcer)(nil)
	_ workload.Labeler   = (*enforcer)(nil)
	_ workload.Revisions = (*enforcer)(nil)
	_ Placement          = (*enforcer)(nil)
	_ PolicyReader       = (*enforcer)(nil)
	_ Lister             = (*enforcer)(nil)
	_ Cluster            = (*enforcer)(nil)
	_ Selectors          = (*enforcer)(nil)
	_ Membership         = (*enforcer)(nil)
	_ LeaderLocator      = (*enforcer)(nil)
	_ WrittenMarks       = (*enforcer)(nil)

	_ extensioncapabilities.Dependent = (*enforcer)(nil)
)

func newEnforcer(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error)) *enforcer {
	return &enforcer{cfg: cfg, set: set, restConfig: rc}
}

// Dependencies makes the collector start the leader elector first and shut
// it down last: the membership reads its Lease's holder and settings.
func (e *enforcer) Dependencies() []component.ID {
	return []component.ID{e.cfg.LeaderElector}
}

// Start finds the leader elector, connects to the API server, fills the
// shared cache and then runs its controllers on the elector's terms.
func (e *enforcer) Start(ctx context.Context, host component.Host) error {
	k8sconfig.RouteKubernetesLogs(e.set.Logger)
	elector, err := leaderelectorextension.Find[leaderelectorextension.Lease](host, e.cfg.LeaderElector)
	if err != nil {
		return err
	}
	e.elector = elector
	tel, err := newTelemetry(e.set.TelemetrySettings)
	if err != nil {
		return err
	}
	e.telemetry = tel
	identity := elector.Identity()
	ls := elector.LeaseSettings()
	e.membership = membership.New(e.set.Logger, membership.Config{
		Namespace: leaderelectorextension.LeaseNamespace(ls.LeaseNamespace), LeaseName: ls.LeaseName,
		Replica: leaderelectorextension.PodOfIdentity(identity), Identity: identity,
		LeaseDuration: ls.LeaseDuration, RenewDeadline: ls.RenewDeadline, RetryPeriod: ls.RetryPeriod,
	}, tel.recordMembers)
	// The leader reads no key while another member can.
	elector.OnNewHolder(e.membership.SetLeader)
	rc, err := e.restConfig(e.cfg.APIConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client (auth_type %s): %w", e.cfg.AuthType, err)
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "network-enforcer"
	scheme, err := render.NewScheme()
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
	if e.served, err = render.DiscoverKinds(cs.Discovery()); err != nil {
		return err
	}
	if !e.served.CiliumNetworkPolicies {
		e.set.Logger.Info("The cluster does not serve CiliumNetworkPolicies (no Cilium): policies of the cilium backend are not rendered",
			zap.String("resource", render.CiliumNetworkPolicyResource.String()))
	}
	if !e.served.AuthorizationPolicies {
		e.set.Logger.Info("The cluster does not serve AuthorizationPolicies (no Istio): policies of the istio backend are not rendered",
			zap.String("resource", render.AuthorizationPolicyResource.String()))
	}
	if e.cache, err = newCache(rc, scheme); err != nil {
		return err
	}
	st, err := newStores(cs, e.cfg.PodGracePeriod)
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
		return fmt.Errorf("the shared cache did not sync (%w): is the API server reachable, and may the service account list and watch pods, workloads, their ControllerRevisions, namespaces, proposals, policies and the policy objects it renders?", err)
	}
	e.resolver = &resolver{stores: st, reader: e.cache}
	e.membership.Attach(runCtx, cs, st.podUID)
	e.events = record.NewBroadcaster(record.WithContext(runCtx))
	e.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	e.recorder = e.events.NewRecorder(scheme, corev1.EventSource{Component: eventComponent})
	return nil
}

// Shutdown gives the membership Lease up, so that the others take this
// replica's keys at once, and stops the cache. The collector shuts every
// pipeline component down first (each writer ends its controller, on a
// leader after writing what it held), and the leader elector after.
func (e *enforcer) Shutdown(ctx context.Context) error {
	if e.cancel != nil {
		mctx, mcancel := context.WithTimeout(ctx, releaseTimeout)
		e.membership.Stop(mctx, true)
		mcancel()
		e.cancel()
		<-e.done
		if e.resolver != nil {
			e.resolver.stores.factory.Shutdown()
		}
		if e.events != nil {
			e.events.Shutdown()
		}
	}
	return nil
}

// releaseTimeout bounds how long a shutdown waits for the membership Lease's
// release.
const releaseTimeout = 5 * time.Second

// eventComponent is the source of the Events that the enforcer records.
const eventComponent = "network-enforcer"

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

// Cache is the shared controller-runtime cache (Cluster).
func (e *enforcer) Cache() cache.Cache { return e.cache }

// Client is the API client (Cluster).
func (e *enforcer) Client() client.Client { return e.client }

// Recorder records Kubernetes Events (Cluster).
func (e *enforcer) Recorder() record.EventRecorder { return e.recorder }

// Served says which optional native kinds the cluster served at start
// (Cluster).
func (e *enforcer) Served() render.ServedKinds { return e.served }

// Reconciled counts a controller's reconcile (Cluster).
func (e *enforcer) Reconciled(ctx context.Context, controller string, err error) {
	e.telemetry.reconciled(ctx, controller, err)
}
