// Package termcontroller runs a controller-runtime controller on each term of
// leadership: a new controller, with its own work queue, starts when a term
// starts and stops when it ends, fed from the shared cache's informers.
package termcontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Retry backoff of a failed reconcile, per object: it doubles from
// retryBaseDelay up to retryMaxDelay, and a success resets it.
const (
	retryBaseDelay = 100 * time.Millisecond
	retryMaxDelay  = time.Minute
)

// Watch is a change to a cached type that asks a controller for reconciles,
// with controller-runtime's handler and predicates.
type Watch struct {
	// Object is the cached type.
	Object client.Object
	// Handler maps a change to the keys to reconcile; nil is the object's own
	// key (handler.EnqueueRequestForObject).
	Handler handler.EventHandler
	// Predicates filter the changes that reach the handler.
	Predicates []predicate.Predicate
}

// ReconcileFunc reconciles one object, named by key, in one term of leadership.
// An error requeues key with a per-object exponential backoff.
type ReconcileFunc func(ctx context.Context, key types.NamespacedName) error

// Controller is one controller that runs as a controller-runtime controller on
// each term of leadership: a new controller, with its own rate-limited work
// queue, starts when the term starts and stops when it ends. Between terms,
// Enqueue keeps the keys it is given, and the next term reconciles them.
type Controller struct {
	name    string
	watches []Watch
	// Reconcile reconciles a key; set before the first term.
	Reconcile ReconcileFunc
	// Resync, when set, is called at the start of each term to enqueue what
	// the previous leader may have left undone.
	Resync func(enqueue func(types.NamespacedName))
	// Workers is how many keys are reconciled side by side, never one key
	// twice at once; 0 is one. Set before the first term.
	Workers int

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request] // this term's; nil between terms
	// pending is what was enqueued between terms, with the highest priority
	// each key asked for.
	pending map[types.NamespacedName]int
	// rounds counts the finished reconciles of each key, so that a test can
	// wait for a round to have happened instead of for a while.
	rounds map[types.NamespacedName]int
	// last is each key's newest finished reconcile: when it began, and how it
	// ended. A hand-off waits on it.
	last map[types.NamespacedName]round
	// stopped is closed by Stop: the controller's work ends with its
	// writer's Shutdown, and no later term starts it again.
	stopped  chan struct{}
	stopOnce sync.Once
	// wroteAll is whether Stop, on a leader, wrote everything that the
	// writer held: the lease's release hands the stream on only then.
	wroteAll bool
}

// round is one finished reconcile.
type round struct {
	began time.Time
	err   error
}

// Stop writes keys at once while this replica leads, bounded by
// HandOffTimeout, and then ends the controller for good.
func (c *Controller) Stop(ctx context.Context, keys []types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(ctx, HandOffTimeout)
	defer cancel()
	err := c.drain(ctx, keys)
	c.mu.Lock()
	c.wroteAll = err == nil
	c.mu.Unlock()
	c.stopOnce.Do(func() { close(c.stopped) })
	if errors.Is(err, errNotLeading) {
		return nil // a standby has nothing to hand off
	}
	return err
}

// HandedOff reports whether the controller was stopped, on a leader, with
// everything its writer held written.
func (c *Controller) HandedOff() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wroteAll
}

// drain reconciles, once more and at once, each of keys, and returns when a
// reconcile of each that began after the call succeeded; an error when ctx
// ends first, or when this replica does not lead.
func (c *Controller) drain(ctx context.Context, keys []types.NamespacedName) error {
	c.mu.Lock()
	queue := c.queue
	c.mu.Unlock()
	if queue == nil {
		return errNotLeading
	}
	start := time.Now()
	for _, key := range keys {
		queue.Add(reconcile.Request{NamespacedName: key})
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left, refused, last := c.unfinishedSince(start, keys)
		if left == 0 {
			return nil
		}
		if refused == left {
			// Every key left was refused for this replica's credentials or
			// rights: an uninstall deletes the ServiceAccount and its
			// bindings beside the Deployment, and waiting out the
			// hand-off's time writes none of them.
			return &errDrain{keys: left, last: last}
		}
		select {
		case <-ctx.Done():
			return &errDrain{keys: left, last: last}
		case <-tick.C:
		}
	}
}

// errNotLeading is a Stop on a replica that does not lead: it has nothing to
// hand off.
var errNotLeading = errors.New("not leading")

// unfinishedSince counts the keys without a successful reconcile that began
// after start, with the newest error among them, and of those the ones whose
// reconcile after start the API server refused for this replica
// (Unauthorized: its token is no longer valid; Forbidden: it has not the
// right).
func (c *Controller) unfinishedSince(start time.Time, keys []types.NamespacedName) (left, refused int, last error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range keys {
		r, ok := c.last[key]
		if !ok || r.began.Before(start) || r.err != nil {
			left++
			if ok && r.err != nil {
				last = r.err
			}
			if ok && !r.began.Before(start) && (apierrors.IsUnauthorized(r.err) || apierrors.IsForbidden(r.err)) {
				refused++
			}
		}
	}
	if left > 0 && last == nil {
		last = errors.New("not reconciled yet")
	}
	return left, refused, last
}

// Rounds returns how many reconciles of key have finished, in every term.
func (c *Controller) Rounds(key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds[key]
}

func (c *Controller) finished(key types.NamespacedName, began time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rounds == nil {
		c.rounds = map[types.NamespacedName]int{}
		c.last = map[types.NamespacedName]round{}
	}
	c.rounds[key]++
	c.last[key] = round{began: began, err: err}
}

// Enqueue asks for a reconcile of key after delay (at once for 0), at
// priority 0. A key enqueued several times before its reconcile is
// reconciled once.
func (c *Controller) Enqueue(key types.NamespacedName, delay time.Duration) {
	c.EnqueuePriority(key, delay, 0)
}

// EnqueuePriority asks for a reconcile of key after delay, at priority: of
// the keys whose delay has passed, the worker takes the highest priority
// first, and keys of one priority in the order they were enqueued
// (controller-runtime's priority queue). A key enqueued several times before
// its reconcile is reconciled once, at the earliest time and the highest
// priority it asked for. The watches enqueue at priority 0, and the cache's
// first list at handler.LowPriority (-100).
func (c *Controller) EnqueuePriority(key types.NamespacedName, delay time.Duration, priority int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue == nil {
		if c.pending == nil {
			c.pending = map[types.NamespacedName]int{}
		}
		if p, ok := c.pending[key]; !ok || priority > p {
			c.pending[key] = priority
		}
		return
	}
	add(c.queue, key, delay, priority)
}

// add adds key to queue after delay at priority, on a queue that has
// priorities (controller-runtime's default); on another, at its turn.
func add(queue workqueue.TypedRateLimitingInterface[reconcile.Request], key types.NamespacedName, delay time.Duration, priority int) {
	req := reconcile.Request{NamespacedName: key}
	if pq, ok := queue.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{After: delay, Priority: &priority}, req)
		return
	}
	queue.AddAfter(req, delay)
}

// New returns a controller that no term runs yet.
func New(name string, watches []Watch, reconcile ReconcileFunc) *Controller {
	return &Controller{name: name, watches: watches, Reconcile: reconcile, stopped: make(chan struct{})}
}

// Name is the controller's name, in its logs and metrics.
func (c *Controller) Name() string { return c.name }

// Env is what a term's controller runs with.
type Env struct {
	Logger *zap.Logger
	// Informers are the shared cache's, which the watches read.
	Informers Informers
	// Reconciled, when set, is told each reconcile's outcome (a metric).
	Reconciled func(ctx context.Context, controller string, err error)
}

// Informers gives the shared cache's informer of a type.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Terms starts a function on each term of leadership: the leader elector.
type Terms interface {
	SetCallBackFuncs(onStartedLeading func(ctx context.Context), onStoppedLeading func())
}

// OnTerms has terms run each of cs, with env, on every term of leadership.
func OnTerms(terms Terms, env Env, cs ...*Controller) {
	for _, c := range cs {
		terms.SetCallBackFuncs(func(ctx context.Context) { c.Run(ctx, env) }, nil)
	}
}

// Run runs the controller for one term, until ctx ends or Stop.
func (c *Controller) Run(ctx context.Context, e Env) {
	select {
	case <-c.stopped:
		return
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	log := e.Logger.With(zap.String("controller", c.name))
	ctrl, err := controller.NewTypedUnmanaged(c.name, controller.TypedOptions[reconcile.Request]{
		Reconciler: reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			began := time.Now()
			err := c.Reconcile(ctx, req.NamespacedName)
			c.finished(req.NamespacedName, began, err)
			if e.Reconciled != nil {
				e.Reconciled(ctx, c.name, err)
			}
			return reconcile.Result{}, err
		}),
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, retryMaxDelay),
		MaxConcurrentReconciles: max(1, c.Workers),
		Logger:                  zapr.NewLogger(log),
		SkipNameValidation:      ptr.To(true), // a new controller of the same name each term
		// Keys taken by priority (EnqueuePriority), then in order.
		UsePriorityQueue: ptr.To(true),
		RecoverPanic:     ptr.To(true),
	})
	if err != nil {
		log.Error("Could not build a controller", zap.Error(err))
		return
	}
	for _, w := range c.watches {
		inf, err := e.Informers.GetInformer(ctx, w.Object)
		if err != nil {
			log.Error("Could not watch", zap.Error(err))
			return
		}
		if err := ctrl.Watch(informerSource(inf, w)); err != nil {
			log.Error("Could not watch", zap.Error(err))
			return
		}
	}
	if err := ctrl.Watch(source.Func(c.attach)); err != nil {
		log.Error("Could not start the queue", zap.Error(err))
		return
	}
	if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
		log.Error("The controller stopped", zap.Error(err))
	}
}

// attach makes queue this term's: Enqueue feeds it from now on, and what was
// kept since the last term is added.
func (c *Controller) attach(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	c.mu.Lock()
	c.queue = queue
	for key, priority := range c.pending {
		add(queue, key, 0, priority)
	}
	c.pending = nil
	c.mu.Unlock()
	if c.Resync != nil {
		c.Resync(func(key types.NamespacedName) { queue.Add(reconcile.Request{NamespacedName: key}) })
	}
	go func() {
		<-ctx.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.queue == queue {
			c.queue = nil
		}
	}()
	return nil
}

// HandOffTimeout (a variable for the tests) bounds how long each writer of a
// leader on its way out writes what it holds (Queue.Stop); past it, the next
// leader reads its flow source's backfill instead.
var HandOffTimeout = 10 * time.Second

// errDrain says which keys a writer could not write on its way out.
type errDrain struct {
	keys int
	last error
}

func (e *errDrain) Error() string {
	return fmt.Sprintf("%d objects not written: %v", e.keys, e.last)
}
