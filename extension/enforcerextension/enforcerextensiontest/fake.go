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

	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/membership"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
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
	mu         sync.Mutex
	byIP       map[string]workload.Ref
	byPod      map[string]workload.Ref
	podReasons map[string]workload.Unresolved
	reasons    map[string]workload.Unresolved
	workloads  map[workload.Ref]WorkloadInfo
	// podRevisions and ipRevisions are the revisions of pods, by
	// "<namespace>/<pod>", and of addresses; revisions are all the
	// revisions that were set, by "<namespace>/<name>".
	podRevisions map[string]workload.Revision
	ipRevisions  map[string]workload.Revision
	revisions    map[string]workload.Revision
	// nodes are the workloads that run on each node.
	nodes     map[string][]workload.Ref
	policies  map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicy
	proposals map[types.NamespacedName]*v1alpha1.WorkloadNetworkPolicyProposal
	events    []Event
	leading   context.Context
	stop      context.CancelFunc
	runs      []leaderelectorextension.StartCallback
	stops     []leaderelectorextension.StopCallback
	writers   []*queue
	// Refuse, when set, is asked before each write (op is create, update,
	// status or patch); an error it returns is the API server's answer.
	Refuse func(op string, obj metav1.Object) error
	// Writes counts the writes that went through, by operation.
	Writes map[string]int
	rv     int

	// owns, membersChanged and checkpoints are the fake's membership;
	// leaderAddress is what LeaderAddress answers.
	owns           func(key string) bool
	membersChanged []func()
	checkpoints    map[string]time.Time
	counted        map[string]time.Time
	released       []string
	forgotten      []string
	settled        func(key string) bool
	settledAsked   map[string]int
	leaderAddress  string
	// leaderIdentity is the identity that LeaderAddress answers.
	leaderIdentity string
	// writtenMarks are what PublishWritten set, by writer, which
	// WrittenThrough answers.
	writtenMarks membership.WrittenWriters

	// Plane is what DataPlane answers: the enforcer's data_plane.
	Plane netpolmatch.DataPlane
}

// DataPlane is the data plane that the judges judge as: Plane.
func (e *Enforcer) DataPlane() netpolmatch.DataPlane { return e.Plane }

// The fake offers every interface of the extension.
var (
	_ workload.Resolver                 = (*Enforcer)(nil)
	_ workload.Labeler                  = (*Enforcer)(nil)
	_ workload.Revisions                = (*Enforcer)(nil)
	_ enforcerextension.PolicyReader    = (*Enforcer)(nil)
	_ enforcerextension.Placement       = (*Enforcer)(nil)
	_ enforcerextension.Lister          = (*Enforcer)(nil)
	_ enforcerextension.Selectors       = (*Enforcer)(nil)
	_ leaderelectorextension.Leadership = (*Enforcer)(nil)
	_ termwriter.ProposalWriting        = (*Enforcer)(nil)
	_ termwriter.PolicyStatusSyncing    = (*Enforcer)(nil)
	_ enforcerextension.Membership      = (*Enforcer)(nil)
	_ enforcerextension.LeaderLocator   = (*Enforcer)(nil)
	_ enforcerextension.Counting        = (*Enforcer)(nil)
	_ enforcerextension.WrittenMarks    = (*Enforcer)(nil)
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
// Start; e is the default leader elector and policy controller too, which it
// fakes as well.
func (e *Enforcer) Host(id component.ID) component.Host { return host{id: id, e: e} }

// policyControllerID is the policy controller extension's default ID, whose
// Renderer the fake offers too (the review page's); named here, since that
// extension's own tests use this package.
var policyControllerID = component.MustNewID("policy_controller")

type host struct {
	id component.ID
	e  *Enforcer
}

func (h host) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{h.id: h.e, leaderelectorextension.DefaultReference(): h.e,
		policyControllerID: h.e}
}

// Start and Shutdown make the fake an extension.
func (e *Enforcer) Start(context.Context, component.Host) error { return nil }

// Shutdown ends leadership.
func (e *Enforcer) Shutdown(context.Context) error {
	e.Follow()
	return nil
}

// Events returns the Events that the writers recorded.
func (e *Enforcer) Events() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
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

// FindWriting is the writers' test seam (termwriter.Finder): it finds the
// fake, which runs their controllers, registered under enforcer in host.
func FindWriting(host component.Host, enforcer, _ component.ID, _ *zap.Logger) (termwriter.Writing, error) {
	return enforcerextension.Find[termwriter.Writing](host, enforcer)
}
