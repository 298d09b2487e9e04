package termcontroller

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// sharedInformer is the part of the shared cache's informer that a term's
// source uses.
type sharedInformer interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error
}

// informerSource feeds a term's queue from a shared informer through w's
// handler and predicates, as controller-runtime's source.Kind does, and
// removes its event handler when the term ends: the informer outlives every
// term, and source.Kind never removes what it adds.
func informerSource(inf sharedInformer, w Watch) source.Source {
	h := w.Handler
	if h == nil {
		h = &handler.EnqueueRequestForObject{}
	}
	return source.Func(func(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			// An object of the cache's list as the term begins (every one,
			// since the informer outlives the terms) is marked so: the
			// handlers enqueue it at handler.LowPriority, after what the
			// writers enqueue themselves.
			AddFunc: func(o any, isInInitialList bool) {
				obj, ok := o.(client.Object)
				if !ok {
					return
				}
				e := event.CreateEvent{Object: obj, IsInInitialList: isInInitialList}
				if passes(w.Predicates, func(p predicate.Predicate) bool { return p.Create(e) }) {
					h.Create(ctx, e, queue)
				}
			},
			UpdateFunc: func(old, o any) {
				oldObj, ok1 := old.(client.Object)
				newObj, ok2 := o.(client.Object)
				if !ok1 || !ok2 {
					return
				}
				e := event.UpdateEvent{ObjectOld: oldObj, ObjectNew: newObj}
				if passes(w.Predicates, func(p predicate.Predicate) bool { return p.Update(e) }) {
					h.Update(ctx, e, queue)
				}
			},
			DeleteFunc: func(o any) {
				e := event.DeleteEvent{}
				if tomb, isTomb := o.(toolscache.DeletedFinalStateUnknown); isTomb {
					o, e.DeleteStateUnknown = tomb.Obj, true
				}
				obj, ok := o.(client.Object)
				if !ok {
					return
				}
				e.Object = obj
				if passes(w.Predicates, func(p predicate.Predicate) bool { return p.Delete(e) }) {
					h.Delete(ctx, e, queue)
				}
			},
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

// passes reports whether every predicate accepts an event.
func passes(preds []predicate.Predicate, accepts func(predicate.Predicate) bool) bool {
	for _, p := range preds {
		if !accepts(p) {
			return false
		}
	}
	return true
}
