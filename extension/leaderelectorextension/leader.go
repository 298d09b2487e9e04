package leaderelectorextension

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// serviceAccountNamespaceFile holds the namespace of the pod, in a pod.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// releaseTimeout bounds how long a shutdown waits for the lease's release: a
// shutdown that the API server holds up leaves the lease to expire instead.
const releaseTimeout = 5 * time.Second

// elector is the extension: it runs leader election on a Lease and calls the
// registered functions while this replica leads. Losing the lease ends their
// context at once; the replica then competes again rather than exiting, so
// it stays a warm standby.
type elector struct {
	cfg *Config
	set extension.Settings
	// identity is this replica's in the Lease: "<pod name>_<uuid>".
	identity string
	// restConfig is the test seam: it builds the API server configuration.
	restConfig func(k8sconfig.APIConfig) (*rest.Config, error)
	// telemetry counts terms and observed changes of the lease holder.
	telemetry *telemetry

	mu      sync.Mutex
	starts  []StartCallback
	stops   []StopCallback
	holders []func(identity string)
	leading context.Context // set while leading
	// observed counts the changes of the lease holder seen.
	observed int
	// le is the running elector, which knows the lease's holder; nil before
	// Start.
	le *leaderelection.LeaderElector
	// cancel ends the election; done is closed when the elector has stopped,
	// after it released the lease that it held.
	cancel context.CancelFunc
	done   chan struct{}
	// ready runs the election, once the collector's pipelines are ready; nil
	// before Start and after it ran.
	ready func() error

	// lock is the Lease lock, whose release carries the hand-off; cs reads
	// the hand-off at the start of a term.
	lock    *handOffLock
	cs      kubernetes.Interface
	handOff handOff
}

// The elector offers every interface of the extension.
var (
	_ LeaderElection = (*elector)(nil)
	_ Leadership     = (*elector)(nil)
	_ Lease          = (*elector)(nil)

	_ extensioncapabilities.PipelineWatcher = (*elector)(nil)
)

func newElector(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error), replica string) *elector {
	return &elector{cfg: cfg, set: set, restConfig: rc, identity: newIdentity(replica)}
}

// Start connects to the API server; the election begins when the collector's
// pipelines are ready (Ready) and lasts until Shutdown.
func (l *elector) Start(_ context.Context, _ component.Host) error {
	k8sconfig.RouteKubernetesLogs(l.set.Logger)
	tel, err := newTelemetry(l.set.TelemetrySettings)
	if err != nil {
		return err
	}
	l.telemetry = tel
	rc, err := l.restConfig(l.cfg.APIConfig)
	if err != nil {
		return fmt.Errorf("kubernetes client (auth_type %s): %w", l.cfg.AuthType, err)
	}
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "network-enforcer"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.mu.Lock()
	l.cancel = cancel
	l.ready = func() error { return l.run(ctx, cs) }
	l.mu.Unlock()
	return nil
}

// Ready begins the election. The collector calls it once every pipeline is
// built and every receiver started, after the extensions started: a replica
// competes for the lease only when it can do a leader's work at once, its
// shared cache filled, its listeners open and its writers registered.
func (l *elector) Ready() error {
	l.mu.Lock()
	ready := l.ready
	l.ready = nil
	l.mu.Unlock()
	if ready == nil {
		return nil
	}
	return ready()
}

// NotReady comes before the receivers stop, on the way to Shutdown: the lease
// is kept until then, so that the writers write what they hold as leaders.
func (l *elector) NotReady() error { return nil }

// Shutdown gives the lease up, with the hand-off when there is one, so that a
// standby takes over at once. The collector shuts every other component down
// first: the flow sources have said how far they read, and the writers have
// written what they held (or withheld the hand-off).
func (l *elector) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel == nil {
		return nil
	}
	if l.IsLeader() {
		l.writeHandOff()
	}
	cancel()
	rctx, rcancel := context.WithTimeout(ctx, releaseTimeout)
	defer rcancel()
	l.released(rctx)
	if l.telemetry != nil {
		l.telemetry.Shutdown()
	}
	return nil
}

// released waits, at most until ctx ends, for the elector that run started
// to stop once run's context ended: a leader releases its lease on its way out,
// so that a standby takes over at its next retry instead of a lease later.
func (l *elector) released(ctx context.Context) {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// observedChanges is how many changes of the lease holder this replica has
// seen, its own taking of the lease included.
func (l *elector) observedChanges() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.observed
}

// SetCallBackFuncs registers the callbacks; when this replica leads already,
// onStartedLeading starts now.
func (l *elector) SetCallBackFuncs(onStartedLeading StartCallback, onStoppedLeading StopCallback) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if onStartedLeading != nil {
		l.starts = append(l.starts, onStartedLeading)
		if l.leading != nil {
			go onStartedLeading(l.leading)
		}
	}
	if onStoppedLeading != nil {
		l.stops = append(l.stops, onStoppedLeading)
	}
}

// OnNewHolder registers fn, told each new holder that the elector observes.
func (l *elector) OnNewHolder(fn func(identity string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holders = append(l.holders, fn)
}

// IsLeader reports whether this replica leads now.
func (l *elector) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading != nil && l.leading.Err() == nil
}

// Identity is this replica's identity in the Lease.
func (l *elector) Identity() string { return l.identity }

// LeaseSettings returns the Lease's name, resolved namespace and durations.
func (l *elector) LeaseSettings() Settings {
	return Settings{LeaseName: l.cfg.LeaseName, LeaseNamespace: LeaseNamespace(l.cfg.LeaseNamespace),
		LeaseDuration: l.cfg.LeaseDuration, RenewDeadline: l.cfg.RenewDeadline, RetryPeriod: l.cfg.RetryPeriod}
}

// run competes for the lease until ctx ends.
func (l *elector) run(ctx context.Context, cs kubernetes.Interface) error {
	lock := &handOffLock{LeaseLock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.cfg.LeaseName, Namespace: LeaseNamespace(l.cfg.LeaseNamespace)},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}}
	l.lock, l.cs = lock, cs
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   l.cfg.LeaseDuration,
		RenewDeadline:   l.cfg.RenewDeadline,
		RetryPeriod:     l.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            l.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: l.started,
			OnStoppedLeading: l.stopped,
			OnNewLeader:      l.newHolder,
		},
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	l.mu.Lock()
	l.done, l.le = done, le
	l.mu.Unlock()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			le.Run(ctx) // returns when leadership is lost, after releasing it
		}
	}()
	return nil
}

func (l *elector) newHolder(identity string) {
	l.mu.Lock()
	l.observed++
	holders := append([]func(string){}, l.holders...)
	l.mu.Unlock()
	l.telemetry.NetworkEnforcerLeaderChangesObserved.Add(context.Background(), 1)
	for _, fn := range holders {
		fn(identity)
	}
}

func (l *elector) started(ctx context.Context) {
	// Before the term's readers start: the stream resumes where the
	// previous leader's writes stopped, when it said so on its way out.
	from, seen := readHandOff(ctx, l.cs, l.lock)
	l.handOff.begin(from, seen)
	if len(from) > 0 {
		for source, t := range from {
			l.set.Logger.Info("Leading: streaming flows and writing, from where the previous leader's writes stopped",
				zap.String("lease", l.cfg.LeaseName), zap.String("source", source), zap.Time("written_until", t))
		}
	} else {
		l.set.Logger.Info("Leading: streaming flows and writing", zap.String("lease", l.cfg.LeaseName))
	}
	l.telemetry.NetworkEnforcerLeaderTerms.Add(ctx, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = ctx
	for _, run := range l.starts {
		go run(ctx)
	}
}

func (l *elector) stopped() {
	l.mu.Lock()
	wasLeading := l.leading != nil
	l.leading = nil
	stops := append([]StopCallback{}, l.stops...)
	l.mu.Unlock()
	if !wasLeading {
		return
	}
	l.set.Logger.Warn("Lost the lease: stopped writing, competing again", zap.String("lease", l.cfg.LeaseName))
	for _, fn := range stops {
		fn()
	}
}

// Holder returns the identity of the lease's holder as this replica last
// observed it, or "" when none is known.
func (l *elector) Holder() string {
	l.mu.Lock()
	le := l.le
	l.mu.Unlock()
	if le == nil {
		return ""
	}
	return le.GetLeader()
}

// ReplicaName is this replica's pod name: POD_NAME, else the hostname, which
// Kubernetes sets to the pod's name.
func ReplicaName() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	n, _ := os.Hostname()
	return n
}

// newIdentity is a replica's identity in the Leases, "<pod name>_<uuid>":
// unique for each start of the process, and naming its pod.
func newIdentity(replica string) string {
	return replica + "_" + string(uuid.NewUUID())
}

// PodOfIdentity is the pod name in an identity of the Lease.
func PodOfIdentity(identity string) string {
	i := strings.LastIndexByte(identity, '_')
	if i <= 0 {
		return ""
	}
	return identity[:i]
}

// LeaseNamespace is the configured namespace, else the pod's own, else
// default.
func LeaseNamespace(configured string) string {
	if configured != "" {
		return configured
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}
