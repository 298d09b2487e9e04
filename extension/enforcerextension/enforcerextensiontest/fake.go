// Package enforcerextensiontest is a fake enforcer extension for the unit tests
// of the components that use one: workloads, pods and policies are set by the
// test, leadership is switched by the test, and the writers' controllers run
// when the test drains their queues, against objects kept in memory. Tests of
// how the real extension behaves against an API server are in
// enforcerextension itself.
package enforcerextensiontest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// WorkloadInfo is what the fake knows of a workload.
type WorkloadInfo struct {
	Selector        *metav1.LabelSelector
	UID             types.UID
	PodLabels       map[string]string
	NamespaceLabels map[string]string
}

// Event is a Kubernetes Event that a writer recorded.
type Event struct {
	Object                types.NamespacedName
	Type, Reason, Message string
}

// Enforcer is the fake. Its zero value is not usable: use New.
type Enforcer struct {
	mu        sync.Mutex
	byIP      map[string]workload.Ref
	reasons   map[string]workload.Unresolved
	workloads map[workload.Ref]WorkloadInfo
	policies  map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicy
	proposals map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicyProposal
	events    []Event
	leading   context.Context
	stop      context.CancelFunc
	runs      []func(context.Context)
	writers   []*queue
	// handedOn is what the flow sources reported at their shutdown; resume
	// is what ResumeFrom answers.
	handedOn []time.Time
	resume   time.Time
	// Refuse, when set, is asked before each write (op is create, update,
	// status or patch); an error it returns is the API server's answer.
	Refuse func(op string, obj metav1.Object) error
	// Writes counts the writes that went through, by operation.
	Writes map[string]int
	rv     int
}

// The fake offers every interface of the extension.
var (
	_ workload.Resolver                     = (*Enforcer)(nil)
	_ workload.Labeler                      = (*Enforcer)(nil)
	_ enforcerextension.PolicyReader        = (*Enforcer)(nil)
	_ enforcerextension.Selectors           = (*Enforcer)(nil)
	_ enforcerextension.Leadership          = (*Enforcer)(nil)
	_ enforcerextension.ProposalWriting     = (*Enforcer)(nil)
	_ enforcerextension.PolicyStatusSyncing = (*Enforcer)(nil)
)
var _ extension.Extension = (*Enforcer)(nil)

// New returns a fake that does not lead yet.
func New() *Enforcer {
	return &Enforcer{
		byIP: map[string]workload.Ref{}, reasons: map[string]workload.Unresolved{},
		workloads: map[workload.Ref]WorkloadInfo{}, policies: map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicy{},
		proposals: map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicyProposal{}, Writes: map[string]int{},
	}
}

// Host returns a component host whose extension id is e, for a component's
// Start.
func (e *Enforcer) Host(id component.ID) component.Host { return host{id: id, e: e} }

type host struct {
	id component.ID
	e  *Enforcer
}

func (h host) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{h.id: h.e}
}

// Start and Shutdown make the fake an extension.
func (e *Enforcer) Start(context.Context, component.Host) error { return nil }

// Shutdown ends leadership.
func (e *Enforcer) Shutdown(context.Context) error {
	e.Follow()
	return nil
}

// AddWorkload makes w known, with pods at ips.
func (e *Enforcer) AddWorkload(w workload.Ref, info WorkloadInfo, ips ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.workloads[w] = info
	for _, ip := range ips {
		e.byIP[ip] = w
	}
}

// Unresolved makes ip resolve to nothing, for reason.
func (e *Enforcer) Unresolved(ip string, reason workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reasons[ip] = reason
}

// SetPolicy adds or replaces a policy.
func (e *Enforcer) SetPolicy(p *v1alpha1.WorkloadNetworkPolicy) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.policies[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.DeepCopy()
}

// PolicyNow returns the policy as the writers left it.
func (e *Enforcer) PolicyNow(key types.NamespacedName) *v1alpha1.WorkloadNetworkPolicy {
	p, _ := e.Policy(key)
	return p
}

// Proposals returns the proposals that the proposal writer wrote.
func (e *Enforcer) Proposals() []*v1alpha1.WorkloadNetworkPolicyProposal {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*v1alpha1.WorkloadNetworkPolicyProposal, 0, len(e.proposals))
	for _, k := range slices.SortedFunc(maps.Keys(e.proposals), func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	}) {
		out = append(out, e.proposals[k].DeepCopy())
	}
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Events returns the Events that the writers recorded.
func (e *Enforcer) Events() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// ResolveIP resolves what AddWorkload and Unresolved said.
func (e *Enforcer) ResolveIP(ip string) (workload.Ref, workload.Unresolved) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.reasons[ip]; ok {
		return workload.Ref{}, r
	}
	if w, ok := e.byIP[ip]; ok {
		return w, ""
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

// ResolvePod resolves no pod by name: the fake knows pods by address only.
func (e *Enforcer) ResolvePod(string, string) (workload.Ref, workload.Unresolved) {
	return workload.Ref{}, workload.UnresolvedNoPod
}

// HasPolicy reports whether a set policy targets w in direction d.
func (e *Enforcer) HasPolicy(w workload.Ref, d v1alpha1.Direction) bool {
	return len(e.Policies(w, d)) > 0
}

// Selector returns the workload's selector.
func (e *Enforcer) Selector(_ context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info, ok := e.workloads[w]
	if !ok || info.Selector == nil {
		return nil, "", false
	}
	return info.Selector.DeepCopy(), info.UID, true
}

// Labels returns the workload's pod and namespace labels.
func (e *Enforcer) Labels(w workload.Ref) (map[string]string, map[string]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	info, ok := e.workloads[w]
	return info.PodLabels, info.NamespaceLabels, ok
}

// Policies returns the set policies that target w in direction d.
func (e *Enforcer) Policies(w workload.Ref, d v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []v1alpha1.WorkloadNetworkPolicy
	for _, p := range e.policies {
		if workload.Target(p.Namespace, p.Spec.TargetRef) == w && p.Spec.Direction == d {
			out = append(out, *p.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.WorkloadNetworkPolicy) int { return compare(a.Name, b.Name) })
	return out
}

// Policy returns a copy of a set policy.
func (e *Enforcer) Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.policies[key]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Proposal returns a copy of a proposal that the writer wrote, or false.
func (e *Enforcer) Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.proposals[key]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// OnLeading registers run, started now when the fake leads.
func (e *Enforcer) OnLeading(run func(context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs = append(e.runs, run)
	if e.leading != nil {
		go run(e.leading)
	}
}

// IsLeader reports whether Lead was called, and Follow not since.
func (e *Enforcer) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading != nil
}

// Lead starts a term of leadership: the OnLeading functions start, and each
// writer's resync runs.
func (e *Enforcer) Lead() {
	e.mu.Lock()
	if e.leading != nil {
		e.mu.Unlock()
		return
	}
	e.leading, e.stop = context.WithCancel(context.Background())
	runs, writers := slices.Clone(e.runs), slices.Clone(e.writers)
	ctx := e.leading
	e.mu.Unlock()
	for _, run := range runs {
		go run(ctx)
	}
	for _, w := range writers {
		w.resyncNow()
	}
}

// ResumeFrom answers what SetResumeFrom set.
func (e *Enforcer) ResumeFrom() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resume, !e.resume.IsZero()
}

// SetResumeFrom sets the previous leader's hand-off that the next term sees.
func (e *Enforcer) SetResumeFrom(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resume = t
}

// HandedOn records a flow source's report.
func (e *Enforcer) HandedOn(newest time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handedOn = append(e.handedOn, newest)
}

// HandedOnTimes returns what the flow sources reported at their shutdown.
func (e *Enforcer) HandedOnTimes() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.handedOn)
}

// HandOff runs the writers' hand-off, as a leader's shutdown does: each
// writer's pending keys are queued at once; Drain then writes them.
func (e *Enforcer) HandOff() {
	e.mu.Lock()
	writers := slices.Clone(e.writers)
	e.mu.Unlock()
	for _, w := range writers {
		w.mu.Lock()
		pending := w.handOff
		w.mu.Unlock()
		if pending == nil {
			continue
		}
		for _, key := range pending() {
			w.Enqueue(key, 0)
		}
	}
}

// Follow ends the term of leadership.
func (e *Enforcer) Follow() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	e.leading, e.stop = nil, nil
}

// queue is a writer's controller in the fake: keys wait until Drain.
type queue struct {
	mu        sync.Mutex
	keys      map[types.NamespacedName]time.Duration
	reconcile func(context.Context, types.NamespacedName) error
	resync    func(enqueue func(types.NamespacedName))
	handOff   func() []types.NamespacedName
	// status is whether it is the status owner's, which policy changes ask.
	status bool
}

func (q *queue) Enqueue(key types.NamespacedName, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.keys == nil {
		q.keys = map[types.NamespacedName]time.Duration{}
	}
	q.keys[key] = delay
}

func (q *queue) OnHandOff(pending func() []types.NamespacedName) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.handOff = pending
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

// Drain runs, while the fake leads, one reconcile for every queued key, as if
// each delay had passed, and returns the errors by key; a key whose reconcile
// failed is queued again, as a controller's backoff would.
func (e *Enforcer) Drain() map[types.NamespacedName]error {
	e.mu.Lock()
	ctx, writers := e.leading, slices.Clone(e.writers)
	e.mu.Unlock()
	errs := map[types.NamespacedName]error{}
	if ctx == nil {
		return errs
	}
	for _, w := range writers {
		w.mu.Lock()
		keys := w.keys
		w.keys = nil
		w.mu.Unlock()
		for _, key := range slices.SortedFunc(maps.Keys(keys), func(a, b types.NamespacedName) int { return compare(a.String(), b.String()) }) {
			if err := w.reconcile(ctx, key); err != nil {
				errs[key] = err
				w.Enqueue(key, 0)
			}
		}
	}
	return errs
}

func (e *Enforcer) addWriter(q *queue) enforcerextension.Queue {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.writers = append(e.writers, q)
	return q
}

// WriteProposals registers the proposal writer.
func (e *Enforcer) WriteProposals(reconcile func(context.Context, types.NamespacedName, enforcerextension.ProposalWriter) error,
	resync func(enqueue func(types.NamespacedName))) enforcerextension.Queue {
	return e.addWriter(&queue{resync: resync, reconcile: func(ctx context.Context, key types.NamespacedName) error {
		return reconcile(ctx, key, proposalWriter{e})
	}})
}

// SyncPolicyStatus registers the status owner. Unlike the real extension, the
// fake does not watch policies: a test says what changed with Changed.
func (e *Enforcer) SyncPolicyStatus(reconcile func(context.Context, types.NamespacedName, enforcerextension.PolicyStatusWriter) error) enforcerextension.Queue {
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

// StartLogsProcessor creates a logs processor of factory f with its default
// configuration, whose enforcer is e, starts it, and returns it with the sink
// of what it hands on; it is shut down when the test ends.
func (e *Enforcer) StartLogsProcessor(tb testing.TB, f processor.Factory) (processor.Logs, *consumertest.LogsSink) {
	tb.Helper()
	return e.StartLogsProcessorWithConfig(tb, f, f.CreateDefaultConfig())
}

// StartLogsProcessorWithConfig is StartLogsProcessor with the configuration
// cfg.
func (e *Enforcer) StartLogsProcessorWithConfig(tb testing.TB, f processor.Factory, cfg component.Config) (processor.Logs, *consumertest.LogsSink) {
	tb.Helper()
	sink := &consumertest.LogsSink{}
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.Start(context.Background(), e.Host(enforcerextension.DefaultReference())); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p, sink
}

// SetProposal adds or replaces a proposal, as if the writer had written it.
func (e *Enforcer) SetProposal(p *v1alpha1.WorkloadNetworkPolicyProposal) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.proposals[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.DeepCopy()
}

// ListProposals returns copies of the proposals in namespace ("" for all),
// sorted by namespace and name.
func (e *Enforcer) ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error) {
	var out []v1alpha1.WorkloadNetworkPolicyProposal
	for _, p := range e.Proposals() {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, *p)
		}
	}
	return out, nil
}

// ListPolicies returns copies of the policies in namespace ("" for all),
// sorted by namespace and name.
func (e *Enforcer) ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []v1alpha1.WorkloadNetworkPolicy
	for _, p := range e.policies {
		if namespace == "" || p.Namespace == namespace {
			out = append(out, *p.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.WorkloadNetworkPolicy) int {
		if c := compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return compare(a.Name, b.Name)
	})
	return out, nil
}
