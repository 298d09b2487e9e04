// Package enforcerextensiontest is a fake enforcer extension for the unit tests
// of the components that use one: workloads, pods and policies are set by the
// test, leadership is switched by the test, and the writers' controllers run
// when the test drains their queues, against objects kept in memory. Tests of
// how the real extension behaves against an API server are in
// enforcerextension itself.
package enforcerextensiontest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Unresolved makes ip resolve to nothing, for reason.

// SetPolicy adds or replaces a policy.

// PolicyNow returns the policy as the writers left it.

// Proposals returns the proposals that the proposal writer wrote.

// Events returns the Events that the writers recorded.

func (e *Enforcer) Events() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// ResolveIP resolves what AddWorkload and Unresolved said.

// ResolvePod resolves no pod by name: the fake knows pods by address only.

// HasPolicy reports whether a set policy targets w in direction d.

// Selector returns the workload's selector.

// Labels returns the workload's pod and namespace labels.

// Policies returns the set policies that target w in direction d.

// Policy returns a copy of a set policy.

// Proposal returns a copy of a proposal that the writer wrote, or false.

// OnLeading registers run, started now when the fake leads.

// IsLeader reports whether Lead was called, and Follow not since.

// Lead starts a term of leadership: the OnLeading functions start, and each

// writer's resync runs.

// ResumeFrom answers what SetResumeFrom set.

// SetResumeFrom sets the previous leader's hand-off that the next term sees.

// HandedOn records a flow source's report.

// HandedOnTimes returns what the flow sources reported at their shutdown.

// HandOff runs the writers' hand-off, as a leader's shutdown does: each

// writer's pending keys are queued at once; Drain then writes them.

// Follow ends the term of leadership.

// queue is a writer's controller in the fake: keys wait until Drain.

// Queued returns the keys that wait for Drain, with the delay each asked for.

// Drain runs, while the fake leads, one reconcile for every queued key, as if

// each delay had passed, and returns the errors by key; a key whose reconcile

// failed is queued again, as a controller's backoff would.

// WriteProposals registers the proposal writer.

// SyncPolicyStatus registers the status owner. Unlike the real extension, the

// fake does not watch policies: a test says what changed with Changed.

// Changed tells the status owner that policy key changed (created, its spec or

// annotations), as the real extension's watch does.

// write applies a write as the API server would: refused when Refuse says

// so, else counted.

// current is the stored proposal that an update of p changes, or the API

// server's answer when there is none or p is behind it. The caller holds the

// lock.

// UpdateStatus writes the status alone, as the status subresource does.

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

// ListProposals returns copies of the proposals in namespace ("" for all),

// sorted by namespace and name.

// ListPolicies returns copies of the policies in namespace ("" for all),

// sorted by namespace and name.
