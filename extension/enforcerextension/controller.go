package enforcerextension

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Retry backoff of a failed reconcile, per object: it doubles from
// retryBaseDelay up to retryMaxDelay, and a success resets it.
const (
	retryBaseDelay = 100 * time.Millisecond
	retryMaxDelay  = time.Minute
)

// ReconcileFunc reconciles one object, named by key, in one term of leadership.
// An error requeues key with a per-object exponential backoff.
type ReconcileFunc func(ctx context.Context, key types.NamespacedName) error

// watch says which objects of a cached type ask which keys for a reconcile.
type watch struct {
	obj client.Object
	// keys maps a changed object to the keys to reconcile; nil is the object's
	// own name.
	keys func(client.Object) []types.NamespacedName
	// onUpdate, when set, filters updates: only those it accepts enqueue.
	onUpdate func(before, after client.Object) bool
}

// termController is one writer that runs as a controller-runtime controller on
// each term of leadership: a new controller, with its own rate-limited work
// queue, starts when the term starts and stops when it ends. Between terms,
// Enqueue keeps the keys it is given, and the next term reconciles them.
type termController struct {
	name      string
	reconcile ReconcileFunc
	watches   []watch
	// resync, when set, is called at the start of each term to enqueue what the
	// previous leader may have left undone.
	resync func(enqueue func(types.NamespacedName))

	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request] // this term's; nil between terms
	pending map[types.NamespacedName]struct{}
	// rounds counts the finished reconciles of each key, so that a test can
	// wait for a round to have happened instead of for a while.
	rounds map[types.NamespacedName]int
	// last is each key's newest finished reconcile: when it began, and how it
	// ended. A hand-off waits on it.
	last map[types.NamespacedName]round
	// handOffKeys, set by the writer, returns the keys holding what it has not
	// written yet, and lets it write them without spacing from then on.
	handOffKeys func() []types.NamespacedName
}

// round is one finished reconcile.
type round struct {
	began time.Time
	err   error
}

// OnHandOff registers the writer's part in a hand-off.
func (c *termController) OnHandOff(pending func() []types.NamespacedName) {
	c.mu.Lock()
	c.handOffKeys = pending
	c.mu.Unlock()
}

// drain reconciles, once more and at once, every key that the writer holds
// unwritten, and returns when a reconcile of each that began after the call
// succeeded; an error when ctx ends first.
func (c *termController) drain(ctx context.Context) error {
	c.mu.Lock()
	pending, queue := c.handOffKeys, c.queue
	c.mu.Unlock()
	if pending == nil {
		return nil
	}
	if queue == nil {
		return errors.New("not leading")
	}
	start := time.Now()
	keys := pending()
	for _, key := range keys {
		queue.Add(reconcile.Request{NamespacedName: key})
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left, last := c.unfinishedSince(start, keys)
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return &errDrain{keys: left, last: last}
		case <-tick.C:
		}
	}
}

// unfinishedSince counts the keys without a successful reconcile that began
// after start, with the newest error among them.
func (c *termController) unfinishedSince(start time.Time, keys []types.NamespacedName) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	left, last := 0, error(nil)
	for _, key := range keys {
		r, ok := c.last[key]
		if !ok || r.began.Before(start) || r.err != nil {
			left++
			if ok && r.err != nil {
				last = r.err
			}
		}
	}
	if left > 0 && last == nil {
		last = errors.New("not reconciled yet")
	}
	return left, last
}

// Rounds returns how many reconciles of key have finished, in every term.
func (c *termController) Rounds(key types.NamespacedName) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds[key]
}

func (c *termController) finished(key types.NamespacedName, began time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rounds == nil {
		c.rounds = map[types.NamespacedName]int{}
		c.last = map[types.NamespacedName]round{}
	}
	c.rounds[key]++
	c.last[key] = round{began: began, err: err}
}

// Enqueue asks for a reconcile of key after delay (at once for 0). A key
// enqueued several times before its reconcile is reconciled once.
func (c *termController) Enqueue(key types.NamespacedName, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queue == nil {
		if c.pending == nil {
			c.pending = map[types.NamespacedName]struct{}{}
		}
		c.pending[key] = struct{}{}
		return
	}
	c.queue.AddAfter(reconcile.Request{NamespacedName: key}, delay)
}

// run runs the controller for one term, until ctx ends.
func (c *termController) run(ctx context.Context, e *enforcer) {
	log := e.set.Logger.With(zap.String("controller", c.name))
	ctrl, err := controller.NewTypedUnmanaged(c.name, controller.TypedOptions[reconcile.Request]{
		Reconciler: reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			began := time.Now()
			err := c.reconcile(ctx, req.NamespacedName)
			c.finished(req.NamespacedName, began, err)
			e.telemetry.reconciled(ctx, c.name, err)
			return reconcile.Result{}, err
		}),
		RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, retryMaxDelay),
		Logger:             zapr.NewLogger(log),
		SkipNameValidation: ptr.To(true), // a new controller of the same name each term
		RecoverPanic:       ptr.To(true),
	})
	if err != nil {
		log.Error("Could not build a controller", zap.Error(err))
		return
	}
	for _, w := range c.watches {
		inf, err := e.cache.GetInformer(ctx, w.obj)
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
func (c *termController) attach(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	c.mu.Lock()
	c.queue = queue
	for key := range c.pending {
		queue.Add(reconcile.Request{NamespacedName: key})
	}
	c.pending = nil
	c.mu.Unlock()
	if c.resync != nil {
		c.resync(func(key types.NamespacedName) { queue.Add(reconcile.Request{NamespacedName: key}) })
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

// informerSource feeds a term's queue from a shared informer, and removes its
// handler when the term ends: the informer outlives every term.
func informerSource(inf interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error
}, w watch) source.Source {
	return source.Func(func(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		add := func(o any) {
			obj, ok := o.(client.Object)
			if !ok {
				tomb, isTomb := o.(toolscache.DeletedFinalStateUnknown)
				if obj, ok = tomb.Obj.(client.Object); !isTomb || !ok {
					return
				}
			}
			if w.keys == nil {
				queue.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
				return
			}
			for _, key := range w.keys(obj) {
				queue.Add(reconcile.Request{NamespacedName: key})
			}
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: add,
			UpdateFunc: func(old, o any) {
				if w.onUpdate != nil {
					oldObj, ok1 := old.(client.Object)
					newObj, ok2 := o.(client.Object)
					if ok1 && ok2 && !w.onUpdate(oldObj, newObj) {
						return
					}
				}
				add(o)
			},
			DeleteFunc: add,
		})
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			_ = inf.RemoveEventHandler(reg)
		}()
		return nil
	})
}
