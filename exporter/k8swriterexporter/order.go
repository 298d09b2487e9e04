package k8swriterexporter

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The order of the writes. The writer's rate limit (write_qps) admits fewer
// writes than a large cluster asks for at once: the writer's controller then
// takes its keys by priority (termwriter.Queue.EnqueuePriority), highest
// first, and in the order they came within a priority. What makes a proposal
// exist and allow its workload's traffic comes first; the evidence of counts
// comes last, most changed first, except what only the leader holds of a
// reader gone silent.
const (
	// priorityCreate: a workload's first proposal (or a policy's first
	// amendment): nothing the cluster has yet.
	priorityCreate = 3000
	// priorityNewEdge: new edges of a proposal that exists, a write of its
	// spec.
	priorityNewEdge = 2000
	// prioritySilent: the evidence of a proposal that holds unwritten
	// records of a reader gone silent, which the leader alone holds: a
	// leader that dies before it writes them loses them.
	prioritySilent = 1500
	// priorityGap: a coverage gap, a condition of the writer's that changes,
	// with no new edge.
	priorityGap = 1000
	// The watches ask at 0 (a person's edit of a proposal's spec, a policy
	// change that rebuilds its amendment), and the cache's first list of
	// a term at controller-runtime's LowPriority (-100).

	// priorityRecheck: the look at a proposal when Stable or Coverage
	// turns, hours later. The queue gives a key the highest priority it was
	// asked at, and the earliest time: a look due in a day, at any priority
	// above the refreshes', would lift the proposal's next refresh above
	// the others. So it asks at the lowest.
	priorityRecheck = priorityRefresh

	// priorityRefresh is the lowest priority of an evidence refresh, a
	// status write of observed counts alone: refreshPriority adds to it how
	// much changed, up to priorityRefreshMax.
	priorityRefresh    = -1000 - refreshFreshSteps*refreshFlowSteps
	priorityRefreshMax = -1001
	// A refresh's priority counts, by powers of two, first the edges that
	// its status does not list yet, then the flows since its last write
	// relative to the flows that write counted.
	refreshFreshSteps = 32
	refreshFlowSteps  = 64
)

// refreshPriority is the priority of an evidence refresh that carries fresh
// edges not yet written and flows new flows beside written flows already
// written (observed.Store.Change): more fresh edges first, then the larger
// relative change of the counts, each by powers of two, so that a busy
// proposal's priority rises a few times between its writes, not with every
// flow.
func refreshPriority(fresh int, flows, written int64) int {
	f := min(bits.Len(uint(max(fresh, 0))), refreshFreshSteps-1)
	// The change in 1/1024ths of the counts written; with none written,
	// the flows themselves (every tracked edge is then fresh too).
	rel := float64(max(flows, 0))
	if written > 0 {
		rel = rel * 1024 / float64(written)
	}
	r := min(bits.Len64(uint64(min(rel, 1<<62))), refreshFlowSteps-1)
	return priorityRefresh + f*refreshFlowSteps + r
}

// waiter is the writer's rate limit: rate.Limiter, or a test's.
type waiter interface {
	Wait(ctx context.Context) error
}

// asked remembers, for each key in the writer's queue, the highest priority
// it was enqueued at, so that an evidence refresh whose change grew is
// enqueued again only when its priority rises.
type asked struct {
	mu sync.Mutex
	m  map[types.NamespacedName]int
}

// raise notes that name is asked at priority and reports whether that is
// higher than what it was asked at (or it was not asked at all).
func (a *asked) raise(name types.NamespacedName, priority int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[types.NamespacedName]int{}
	}
	if p, ok := a.m[name]; ok && p >= priority {
		return false
	}
	a.m[name] = priority
	return true
}

// queued reports the priority name waits at in the writer's queue.
func (a *asked) queued(name types.NamespacedName) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.m[name]
	return p, ok
}

// taken forgets name: its reconcile began, and took it off the queue.
func (a *asked) taken(name types.NamespacedName) {
	a.mu.Lock()
	delete(a.m, name)
	a.mu.Unlock()
}

// enqueue asks for a write of name after delay at priority.
func (w *writer) enqueue(name types.NamespacedName, delay time.Duration, priority int) {
	w.asked.raise(name, priority)
	w.queue.EnqueuePriority(name, delay, priority)
}

// enqueueSpec asks for the write of what was learned into name: its
// creation, when the cache does not have it, or its new edges.
func (w *writer) enqueueSpec(name types.NamespacedName) {
	p := priorityNewEdge
	if _, ok := w.cached(name); !ok {
		p = priorityCreate
	}
	w.enqueue(name, writeInterval, p)
}

// enqueueRefresh asks for a write of name's observed edges after delay, at
// the priority of how much they changed.
func (w *writer) enqueueRefresh(name types.NamespacedName, delay time.Duration) {
	w.enqueue(name, delay, w.refreshPriority(name))
}

// refreshPriority is the priority of name's evidence refresh now.
func (w *writer) refreshPriority(name types.NamespacedName) int {
	return refreshPriority(w.observed.Change(name))
}

// raiseRefresh enqueues name again, as it waits, when what changed since
// its last write raises its priority: the first flows since a write enqueue
// it, and the queue keeps its time and takes the higher priority.
func (w *writer) raiseRefresh(name types.NamespacedName, now time.Time) {
	have, ok := w.asked.queued(name)
	if !ok {
		return // not waiting: being written, and the write asks again for what it did not take
	}
	if p := w.refreshPriority(name); p > have {
		w.enqueue(name, max(writeInterval, w.observed.Wait(name, w.cfg.ObservedInterval, now)), p)
	}
}
