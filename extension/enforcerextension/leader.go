package enforcerextension

import (
	"context"
	"os"
	"strings"
	"sync"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// serviceAccountNamespaceFile holds the namespace of the pod, in a pod.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leadership runs leader election on a Lease and calls the registered functions
// while this replica leads. Losing the lease ends their context at once; the
// replica then competes again rather than exiting, so it stays a warm standby.
type leadership struct {
	logger *zap.Logger
	cfg    LeaderElectionConfig
	// identity is this replica's in the Lease: "<pod name>_<uuid>".
	identity string
	// telemetry counts terms and observed changes of the lease holder; nil
	// counts nothing.
	telemetry *telemetry
	// onNewLeader is told each new holder of the lease that the elector
	// sees; nil tells no one.
	onNewLeader func(identity string)

	mu      sync.Mutex
	runs    []func(context.Context)
	leading context.Context // set while leading
	// observed counts the changes of the lease holder seen.
	observed int
	// elector is the running elector, which knows the lease's holder; nil
	// before run.
	elector *leaderelection.LeaderElector
	// done is closed when the elector has stopped, after it released the
	// lease that it held; nil before run.
	done chan struct{}

	// lock is the Lease lock, whose release carries the hand-off; cs reads
	// the hand-off at the start of a term.
	lock    *handOffLock
	cs      kubernetes.Interface
	handOff handOff
}

// released waits, at most until ctx ends, for the elector that run started
// to stop once run's context ended: a leader releases its lease on its way out,
// so that a standby takes over at its next retry instead of a lease later.
func (l *leadership) released(ctx context.Context) {
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
func (l *leadership) observedChanges() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.observed
}

// OnLeading registers run; when this replica leads already, run starts now.
func (l *leadership) OnLeading(run func(context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, run)
	if l.leading != nil {
		go run(l.leading)
	}
}

// IsLeader reports whether this replica leads now.
func (l *leadership) IsLeader() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leading != nil && l.leading.Err() == nil
}

// run competes for the lease until ctx ends.
func (l *leadership) run(ctx context.Context, cs kubernetes.Interface) error {
	lock := &handOffLock{LeaseLock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: l.cfg.LeaseName, Namespace: leaseNamespace(l.cfg.LeaseNamespace)},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}}
	l.lock, l.cs = lock, cs
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   l.cfg.LeaseDuration,
		RenewDeadline:   l.cfg.RenewDeadline,
		RetryPeriod:     l.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            l.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: l.started,
			OnStoppedLeading: l.stopped,
			OnNewLeader: func(identity string) {
				l.mu.Lock()
				l.observed++
				l.mu.Unlock()
				if l.telemetry != nil {
					l.telemetry.observed.Add(context.Background(), 1)
				}
				if l.onNewLeader != nil {
					l.onNewLeader(identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	done := make(chan struct{})
	l.mu.Lock()
	l.done, l.elector = done, elector
	l.mu.Unlock()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			elector.Run(ctx) // returns when leadership is lost, after releasing it
		}
	}()
	return nil
}

func (l *leadership) started(ctx context.Context) {
	// Before the term's readers start: the stream resumes where the
	// previous leader's writes stopped, when it said so on its way out.
	from, ok := readHandOff(ctx, l.cs, l.lock)
	l.handOff.mu.Lock()
	l.handOff.from, l.handOff.fromOK = from, ok
	l.handOff.reported = false
	l.handOff.mu.Unlock()
	if ok {
		l.logger.Info("Leading: streaming flows and writing, from where the previous leader's writes stopped",
			zap.String("lease", l.cfg.LeaseName), zap.Time("written_until", from))
	} else {
		l.logger.Info("Leading: streaming flows and writing", zap.String("lease", l.cfg.LeaseName))
	}
	if l.telemetry != nil {
		l.telemetry.terms.Add(ctx, 1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leading = ctx
	for _, run := range l.runs {
		go run(ctx)
	}
}

func (l *leadership) stopped() {
	l.mu.Lock()
	wasLeading := l.leading != nil
	l.leading = nil
	l.mu.Unlock()
	if wasLeading {
		l.logger.Warn("Lost the lease: stopped writing, competing again", zap.String("lease", l.cfg.LeaseName))
	}
}

// leader returns the identity of the lease's holder as this replica last
// observed it, or "" when none is known.
func (l *leadership) leader() string {
	l.mu.Lock()
	elector := l.elector
	l.mu.Unlock()
	if elector == nil {
		return ""
	}
	return elector.GetLeader()
}

// replicaName is this replica's pod name: POD_NAME, else the hostname, which
// Kubernetes sets to the pod's name.
func replicaName() string {
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

// podOfIdentity is the pod name in an identity that newIdentity made.
func podOfIdentity(identity string) string {
	i := strings.LastIndexByte(identity, '_')
	if i <= 0 {
		return ""
	}
	return identity[:i]
}

// leaseNamespace is the configured namespace, else the pod's own, else default.
func leaseNamespace(configured string) string {
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
