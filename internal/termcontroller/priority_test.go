package termcontroller

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// TestKeysAreTakenByPriority: while the one worker is held (a writer waiting
// for its rate limit), the keys that come in are taken highest priority
// first, and in the order they came within a priority; a key enqueued again
// keeps the highest priority it asked for, and one enqueued between terms
// keeps its priority into the next. No clock: the worker is held by a
// channel, and the test counts the order.
func TestKeysAreTakenByPriority(t *testing.T) {
	held := make(chan struct{})
	started := make(chan struct{})
	var mu sync.Mutex
	var order []string
	c := New("priority-test", nil, nil)
	c.Reconcile = func(_ context.Context, key types.NamespacedName) error {
		mu.Lock()
		order = append(order, key.Name)
		n := len(order)
		mu.Unlock()
		if n == 1 {
			close(started)
			<-held
		}
		return nil
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "shop", Name: name} }
	// Between terms: kept, with its priority.
	c.EnqueuePriority(key("holds-the-worker"), 0, 5)
	done := runTerm(t, c)
	<-started
	c.EnqueuePriority(key("refresh-small"), 0, -2000)
	c.Enqueue(key("watch"), 0)
	c.EnqueuePriority(key("refresh-big"), 0, -1500)
	c.EnqueuePriority(key("new-edge"), 0, 2000)
	c.EnqueuePriority(key("create-a"), 0, 3000)
	c.EnqueuePriority(key("create-b"), 0, 3000)
	c.EnqueuePriority(key("refresh-then-create"), 0, -1800)
	c.EnqueuePriority(key("refresh-then-create"), 0, 3000) // raised: after create-b, which came first at 3000
	c.EnqueuePriority(key("new-edge"), 0, -1000)           // lowered: keeps 2000
	close(held)
	want := []string{"holds-the-worker", "create-a", "create-b", "refresh-then-create", "new-edge", "watch", "refresh-big", "refresh-small"}
	reconciled := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(order)
	}
	testwait.For(t, "every key's reconcile", 30*time.Second, func() bool { return len(reconciled()) >= len(want) })
	if got := reconciled(); !slices.Equal(got, want) {
		t.Fatalf("reconciled %v, want %v", got, want)
	}
	if err := c.Stop(context.Background(), nil); err != nil && !errors.Is(err, errNotLeading) {
		t.Fatal(err)
	}
	<-done
}

// fakeInformer hands the handler that a term's source adds to the test.
type fakeInformer struct {
	h toolscache.ResourceEventHandler
}

func (f *fakeInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	f.h = h
	return nil, nil
}

func (f *fakeInformer) RemoveEventHandler(toolscache.ResourceEventHandlerRegistration) error {
	return nil
}

// TestTheCachesListComesAtLowPriority: the objects that the cache lists as a
// term's source starts are enqueued at handler.LowPriority, below what the
// writers enqueue at once; an object created during the term at 0.
func TestTheCachesListComesAtLowPriority(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("list-priority")
	defer q.ShutDown()
	inf := &fakeInformer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := informerSource(inf, Watch{Object: &corev1.ConfigMap{}}).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	}
	inf.h.OnAdd(cm("listed"), true)
	inf.h.OnAdd(cm("created"), false)
	want := map[string]int{"created": 0, "listed": handler.LowPriority}
	for range want {
		item, priority, _ := q.GetWithPriority()
		if p, ok := want[item.Name]; !ok || p != priority {
			t.Errorf("%s at priority %d, want %d", item.Name, priority, p)
		}
		q.Done(item)
	}
}
