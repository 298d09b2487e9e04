package enforcerextensiontest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
)

// The fake's writers: their controllers run when a test drains their queues,
// against objects kept in memory.

// queue is a writer's controller in the fake: keys wait until Drain.
type queue struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]time.Duration
	// priorities are the queued keys' priorities, the highest each asked for.
	priorities map[types.NamespacedName]int
	reconcile  func(context.Context, types.NamespacedName) error
	resync     func(enqueue func(types.NamespacedName))
	// owner is the fake whose leadership Stop asks.
	owner *Enforcer
	// stopped is set by Stop: the fake's Drain skips the queue from then on.
	stopped bool
	// status is whether it is the status owner's, which policy changes ask.
	status bool
}

func (q *queue) Enqueue(key types.NamespacedName, delay time.Duration) {
	q.EnqueuePriority(key, delay, 0)
}

func (q *queue) EnqueuePriority(key types.NamespacedName, delay time.Duration, priority int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.keys == nil {
		q.keys = map[types.NamespacedName]time.Duration{}
		q.priorities = map[types.NamespacedName]int{}
	}
	// As the priority queue: a key queued twice keeps the highest priority,
	if p, ok := q.priorities[key]; !ok || priority > p {
		q.priorities[key] = priority
	}
	// and is taken at the earlier time.
	if d, ok := q.keys[key]; ok && d <= delay {
		return
	}
	q.keys[key] = delay
}

// Stop writes keys at once while the fake leads, as the real controller does
// on a leader's way out, and returns what failed; then the queue is done.
func (q *queue) Stop(_ context.Context, keys []types.NamespacedName) error {
	q.owner.mu.Lock()
	ctx := q.owner.leading
	q.owner.mu.Unlock()
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	if ctx == nil {
		return nil
	}
	var errs []error
	for _, key := range keys {
		if err := q.reconcile(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

func (q *queue) resyncNow() {
	if q.resync != nil {
		q.resync(func(key types.NamespacedName) { q.Enqueue(key, 0) })
	}
}

// Queued returns the keys that wait for Drain, with the delay each asked for.
func (e *Enforcer) Queued() map[types.NamespacedName]time.Duration {
	e.mu.Lock()
	writers := slices.Clone(e.writers)
	e.mu.Unlock()
	out := map[types.NamespacedName]time.Duration{}
	for _, w := range writers {
		w.mu.Lock()
		maps.Copy(out, w.keys)
		w.mu.Unlock()
	}
	return out
}

// Priorities returns the keys that wait for Drain, with the priority each
// asked for.
func (e *Enforcer) Priorities() map[types.NamespacedName]int {
	e.mu.Lock()
	writers := slices.Clone(e.writers)
	e.mu.Unlock()
	out := map[types.NamespacedName]int{}
	for _, w := range writers {
		w.mu.Lock()
		maps.Copy(out, w.priorities)
		w.mu.Unlock()
	}
	return out
}

// Drain runs, while the fake leads, one reconcile for every queued key, as if
// each delay had passed, the highest priority first and then by name, and
// returns the errors by key; a key whose reconcile failed is queued again at
// its priority, as a controller's backoff would.
func (e *Enforcer) Drain() map[types.NamespacedName]error {
	return e.DrainWithin(math.MaxInt64)
}

// DrainWithin is Drain of the keys queued with a delay of at most d, as if d
// had passed: the others stay queued.
func (e *Enforcer) DrainWithin(d time.Duration) map[types.NamespacedName]error {
	e.mu.Lock()
	ctx, writers := e.leading, slices.Clone(e.writers)
	e.mu.Unlock()
	errs := map[types.NamespacedName]error{}
	if ctx == nil {
		return errs
	}
	for _, w := range writers {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			continue
		}
		keys, priorities := map[types.NamespacedName]int{}, map[types.NamespacedName]int{}
		for key, delay := range w.keys {
			if delay <= d {
				keys[key], priorities[key] = 0, w.priorities[key]
				delete(w.keys, key)
				delete(w.priorities, key)
			}
		}
		w.mu.Unlock()
		for _, key := range slices.SortedFunc(maps.Keys(keys), func(a, b types.NamespacedName) int {
			if pa, pb := priorities[a], priorities[b]; pa != pb {
				return cmp.Compare(pb, pa)
			}
			return compare(a.String(), b.String())
		}) {
			if err := w.reconcile(ctx, key); err != nil {
				errs[key] = err
				w.EnqueuePriority(key, 0, priorities[key])
			}
		}
	}
	return errs
}

func (e *Enforcer) addWriter(q *queue) termwriter.Queue {
	q.owner = e
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writers = append(e.writers, q)
	return q
}

// WriteProposals registers the proposal writer.
func (e *Enforcer) WriteProposals(_ []termwriter.Watch, reconcile func(context.Context, types.NamespacedName, termwriter.ProposalWriter) error,
	resync func(enqueue func(types.NamespacedName))) termwriter.Queue {
	return e.addWriter(&queue{resync: resync, reconcile: func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, proposalWriter{e})
	}})
}

// SyncPolicyStatus registers the status owner. Unlike the real extension, the
// fake does not watch policies: a test says what changed with Changed.
func (e *Enforcer) SyncPolicyStatus(_ []termwriter.Watch, reconcile func(context.Context, types.NamespacedName, termwriter.PolicyStatusWriter) error) termwriter.Queue {
	return e.addWriter(&queue{status: true, reconcile: func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, statusWriter{e})
	}})
}

// Changed tells the status owner that policy key changed (created, its spec or
// annotations), as the real extension's watch does.
func (e *Enforcer) Changed(key types.NamespacedName) {
	e.mu.Lock()
	writers := slices.Clone(e.writers)
	e.mu.Unlock()
	for _, w := range writers {
		if w.status {
			w.Enqueue(key, 0)
		}
	}
}

// write applies a write as the API server would: refused when Refuse says
// so, else counted.
func (e *Enforcer) write(op string, obj metav1.Object) error {
	if e.Refuse != nil {
		if err := e.Refuse(op, obj); err != nil {
			return err
		}
	}
	e.Writes[op]++
	return nil
}

type proposalWriter struct{ e *Enforcer }

var proposalResource = schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "workloadnetworkpolicyproposals"}

func (w proposalWriter) Get(_ context.Context, key types.NamespacedName, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	have, ok := w.e.proposals[key]
	if !ok {
		return apierrors.NewNotFound(proposalResource, key.Name)
	}
	have.DeepCopyInto(p)
	return nil
}

func (w proposalWriter) Create(_ context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	if _, ok := w.e.proposals[key]; ok {
		return apierrors.NewAlreadyExists(proposalResource, p.Name)
	}
	if err := w.e.write("create", p); err != nil {
		return err
	}
	// As the API server, which takes the status through its subresource only.
	p.Status = v1alpha1.WorkloadNetworkPolicyProposalStatus{}
	w.e.rv++
	p.ResourceVersion = strconv.Itoa(w.e.rv)
	w.e.proposals[key] = p.DeepCopy()
	return nil
}

func (w proposalWriter) Update(_ context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	have, err := w.current(p)
	if err != nil {
		return err
	}
	if err := w.e.write("update", p); err != nil {
		return err
	}
	w.e.rv++
	p.ResourceVersion = strconv.Itoa(w.e.rv)
	p.Status = *have.Status.DeepCopy() // an update leaves the status as it is
	w.e.proposals[key] = p.DeepCopy()
	return nil
}

// current is the stored proposal that an update of p changes, or the API
// server's answer when there is none or p is behind it. The caller holds the
// lock.
func (w proposalWriter) current(p *v1alpha1.WorkloadNetworkPolicyProposal) (*v1alpha1.WorkloadNetworkPolicyProposal, error) {
	have, ok := w.e.proposals[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
	if !ok {
		return nil, apierrors.NewNotFound(proposalResource, p.Name)
	}
	if have.ResourceVersion != p.ResourceVersion {
		return nil, apierrors.NewConflict(proposalResource, p.Name, fmt.Errorf("resourceVersion %s, have %s", p.ResourceVersion, have.ResourceVersion))
	}
	return have, nil
}

// UpdateStatus writes the status alone, as the status subresource does.
func (w proposalWriter) UpdateStatus(_ context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	have, err := w.current(p)
	if err != nil {
		return err
	}
	if err := w.e.write("status", p); err != nil {
		return err
	}
	w.e.rv++
	p.ResourceVersion = strconv.Itoa(w.e.rv)
	have.Status = *p.Status.DeepCopy()
	have.ResourceVersion = p.ResourceVersion
	p.Spec = *have.Spec.DeepCopy()
	return nil
}

func (w proposalWriter) Event(p *v1alpha1.WorkloadNetworkPolicyProposal, eventType, reason, message string) {
	w.e.record(p, eventType, reason, message)
}

func (e *Enforcer) record(obj metav1.Object, eventType, reason, message string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, Event{Object: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Type: eventType, Reason: reason, Message: message})
}

type statusWriter struct{ e *Enforcer }

var policyResource = schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "workloadnetworkpolicies"}

func (w statusWriter) UpdateStatus(_ context.Context, key types.NamespacedName,
	mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error) {
	// mutate runs unlocked, as on the real enforcer: it may read the cache.
	w.e.mu.Lock()
	have, ok := w.e.policies[key]
	var p *v1alpha1.WorkloadNetworkPolicy
	if ok {
		p = have.DeepCopy()
	}
	w.e.mu.Unlock()
	if !ok {
		return nil, apierrors.NewNotFound(policyResource, key.Name)
	}
	if !mutate(p) {
		return p, nil
	}
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	if err := w.e.write("status", p); err != nil {
		return nil, err
	}
	if have, ok = w.e.policies[key]; ok {
		have.Status = *p.Status.DeepCopy()
	}
	return p, nil
}

func (w statusWriter) RemoveAnnotations(_ context.Context, p *v1alpha1.WorkloadNetworkPolicy, keys []string) error {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	have, ok := w.e.policies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
	if !ok {
		return apierrors.NewNotFound(policyResource, p.Name)
	}
	if err := w.e.write("patch", p); err != nil {
		return err
	}
	for _, k := range keys {
		delete(have.Annotations, k)
	}
	return nil
}

func (w statusWriter) Event(p *v1alpha1.WorkloadNetworkPolicy, eventType, reason, message string) {
	w.e.record(p, eventType, reason, message)
}
