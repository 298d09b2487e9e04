package k8swriterexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var (
	frontend    = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "frontend"}
	cart        = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}
	cartIngress = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
)

func startWriter(t *testing.T, configure ...func(*Config)) (*writer, *enforcerextensiontest.Enforcer) {
	t.Helper()
	fake := enforcerextensiontest.New()
	fake.AddWorkload(frontend, enforcerextensiontest.WorkloadInfo{UID: "frontend-uid",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}})
	fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{UID: "cart-uid",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}})
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	for _, c := range configure {
		c(cfg)
	}
	w, err := newWriter(exportertest.NewNopSettings(f.Type()), cfg, enforcerextensiontest.FindWriting)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stopWatchingSilent)
	return w, fake
}

func learn(t *testing.T, w *writer, ports ...uint32) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, port := range ports {
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: port}
		e.AppendTo(sl)
	}
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// TestWritesFollowEdges: a burst of new edges asks for one write of its
// proposal, a writeInterval later; edges already written ask for none.
func TestWritesFollowEdges(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080, 8443, 8080)
	if q := fake.Queued(); len(q) != 1 || q[cartIngress] != writeInterval {
		t.Fatalf("queued %v, want the cart ingress proposal after %s", q, writeInterval)
	}
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 || got[0].Name != cartIngress.Name || got[0].Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedBy ||
		len(got[0].OwnerReferences) != 1 || got[0].OwnerReferences[0].UID != "cart-uid" {
		t.Fatalf("proposals %+v", got)
	}
	if ports := got[0].Spec.Kubernetes.Ingress[0].Ports; len(ports) != 2 {
		t.Fatalf("ports %+v, want 8080 and 8443", ports)
	}
	assertCondition(t, got[0], v1alpha1.ConditionBounded, metav1.ConditionFalse, v1alpha1.ReasonWithinBounds)
	assertCondition(t, got[0], v1alpha1.ConditionWritten, metav1.ConditionTrue, v1alpha1.ReasonAccepted)
	learn(t, w, 8443, 8080)
	if q := queuedWrites(fake); len(q) != 0 {
		t.Fatalf("edges already written queued %v", q)
	}
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 0 || fake.Writes["status"] != 1 {
		t.Fatalf("writes %v, want one create and its status", fake.Writes)
	}
}

// TestNewLeaderChecksEveryProposal: a new term asks for a round of every
// proposal learned so far, which writes nothing that is already there.
func TestNewLeaderChecksEveryProposal(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080)
	fake.Drain()
	fake.Follow()
	fake.Lead()
	if q := fake.Queued(); len(q) != 1 {
		t.Fatalf("a new term queued %v, want the one proposal", q)
	}
	fake.Drain()
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 0 {
		t.Fatalf("writes %v, want the first create only", fake.Writes)
	}
}

// TestShutdownWritesWhatIsHeld: the writer's own Shutdown, on a leader's way
// out, writes at once the proposal whose write was still spaced; on a standby
// it writes nothing, and the queue takes no more work either way.
func TestShutdownWritesWhatIsHeld(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080)
	if q := fake.Queued(); len(q) != 1 {
		t.Fatalf("queued %v, want the cart ingress proposal, spaced", q)
	}
	if err := w.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := onlyProposal(t, fake); len(got.Spec.Kubernetes.Ingress) != 1 || fake.Writes["create"] != 1 {
		t.Fatalf("after Shutdown: writes %v, proposal %+v; want the proposal created", fake.Writes, got.Spec)
	}

	standby, fake := startWriter(t)
	learn(t, standby, 8080)
	if err := standby.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.Lead()
	fake.Drain()
	if n := len(fake.Proposals()); n != 0 || fake.Writes["create"] != 0 {
		t.Fatalf("a standby's Shutdown, then a term: %d proposals, writes %v; want none", n, fake.Writes)
	}
}

// TestRefusedWriteIsAnEventAndRetried: a write that the API server refuses
// is recorded as a Warning Event, and the proposal stays to be written.
// assertCondition checks that p has condition typ with that status and reason,
// and returns its message.
func assertCondition(t *testing.T, p *v1alpha1.WorkloadNetworkPolicyProposal, typ string, status metav1.ConditionStatus, reason string) string {
	t.Helper()
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("%s condition %+v, want %s/%s", typ, c, status, reason)
	}
	return c.Message
}

func onlyProposal(t *testing.T, fake *enforcerextensiontest.Enforcer) *v1alpha1.WorkloadNetworkPolicyProposal {
	t.Helper()
	got := fake.Proposals()
	if len(got) != 1 {
		t.Fatalf("%d proposals, want 1", len(got))
	}
	return got[0]
}

func portRange(start, n uint32) []uint32 {
	var out []uint32
	for p := start; p < start+n; p++ {
		out = append(out, p)
	}
	return out
}

func TestPortsOverTheLimitCollapseIntoARange(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, portRange(1000, 40)...) // over the default 32
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	p := onlyProposal(t, fake)
	ports := p.Spec.Kubernetes.Ingress[0].Ports
	if len(ports) != 1 || *ports[0].Protocol != corev1.ProtocolTCP || ports[0].Port.IntVal != 1000 ||
		ports[0].EndPort == nil || *ports[0].EndPort != 1039 {
		t.Fatalf("ports %+v, want TCP 1000-1039", ports)
	}
	if msg := assertCondition(t, p, v1alpha1.ConditionBounded, metav1.ConditionTrue, v1alpha1.ReasonOverLimits); msg !=
		"1 peer's ports collapsed into ranges (over 32 ports)" {
		t.Errorf("message %q", msg)
	}

	// A port below the range widens it; ports inside it write nothing.
	learn(t, w, 80)
	fake.Drain()
	learn(t, w, 1010, 1020)
	fake.Drain()
	ports = onlyProposal(t, fake).Spec.Kubernetes.Ingress[0].Ports
	if len(ports) != 1 || ports[0].Port.IntVal != 80 || *ports[0].EndPort != 1039 {
		t.Fatalf("ports %+v, want TCP 80-1039", ports)
	}
	// The status of an update that grew the spec is written when its last
	// new edge changed: here, only when the clock passed a second since the
	// create (the test's edges are not observed, so the edge is not named).
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 1 || fake.Writes["status"] < 1 {
		t.Fatalf("writes %v, want a create, its status, and one update", fake.Writes)
	}

	// A new writer (a restart) learning a few ports again keeps the range.
	f := NewFactory()
	w2, err := newWriter(exportertest.NewNopSettings(f.Type()), f.CreateDefaultConfig().(*Config), enforcerextensiontest.FindWriting)
	must(t, err)
	must(t, w2.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())))
	t.Cleanup(w2.stopWatchingSilent)
	learn(t, w2, 8080)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if fake.Writes["update"] != 2 {
		t.Fatalf("writes %v, want one more update", fake.Writes)
	}
	ports = onlyProposal(t, fake).Spec.Kubernetes.Ingress[0].Ports
	if len(ports) != 1 || ports[0].Port.IntVal != 80 || *ports[0].EndPort != 8080 {
		t.Fatalf("ports %+v, want TCP 80-8080", ports)
	}
}

func TestIstioPortsOverTheLimitAllowAnyPort(t *testing.T) {
	w, fake := startWriter(t, func(c *Config) { c.MaxPortsPerPeer = 2 })
	fake.Lead()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, port := range []uint32{8080, 8443, 9090} {
		e := learning.Edge{Backend: v1alpha1.BackendIstio, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Principal: "cluster.local/ns/shop/sa/frontend", Protocol: "tcp", Port: port}
		e.AppendTo(sl)
	}
	e := learning.Edge{Backend: v1alpha1.BackendIstio, Workload: cart, Direction: v1alpha1.DirectionIngress,
		Peer: frontend, Principal: "cluster.local/ns/web/sa/web", Protocol: "tcp", Port: 8080}
	e.AppendTo(sl)
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	p := onlyProposal(t, fake)
	r := p.Spec.Istio.Rules
	if len(r) != 2 || r[0].From[0].Source.Principals[0] != "cluster.local/ns/shop/sa/frontend" || len(r[0].To) != 0 ||
		len(r[1].To) != 1 || len(r[1].To[0].Operation.Ports) != 1 {
		t.Fatalf("rules %+v, want any port for the frontend and 8080 for web", r)
	}
	if msg := assertCondition(t, p, v1alpha1.ConditionBounded, metav1.ConditionTrue, v1alpha1.ReasonOverLimits); msg !=
		"1 peer's ports collapsed into any port (over 2 ports)" {
		t.Errorf("message %q", msg)
	}
	// Read back, the rule stays any port.
	again := specOf(v1alpha1.BackendIstio, p.Spec.TargetRef, p.Spec.Direction,
		&metav1.LabelSelector{MatchLabels: p.Spec.Istio.Selector.MatchLabels}, rulesOf(&p.Spec))
	if !apiequality.Semantic.DeepEqual(again, p.Spec) {
		t.Fatalf("read back and written again, the spec changed:\n%+v\n%+v", p.Spec, again)
	}
}

func TestPeersOverTheLimitAreLeftOut(t *testing.T) {
	w, fake := startWriter(t, func(c *Config) { c.MaxPeers = 2 })
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, name := range []string{"d", "b", "c", "a"} {
		peer := workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: name}
		fake.AddWorkload(peer, enforcerextensiontest.WorkloadInfo{UID: types.UID(name + "-uid"),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}})
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: peer, Protocol: "tcp", Port: 8080}
		e.AppendTo(sl)
	}
	fake.Lead()
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	p := onlyProposal(t, fake)
	var got []string
	for _, r := range p.Spec.Kubernetes.Ingress {
		got = append(got, r.From[0].PodSelector.MatchLabels["app"])
	}
	if fmt.Sprint(got) != "[a b]" {
		t.Fatalf("peers %v, want the first two in canonical order", got)
	}
	if msg := assertCondition(t, p, v1alpha1.ConditionBounded, metav1.ConditionTrue, v1alpha1.ReasonOverLimits); msg !=
		"2 peers left out (over 2 peers)" {
		t.Errorf("message %q", msg)
	}
}

func TestRefusedWriteIsNotRetriedUntilANewEdge(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	tooLarge := apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	attempts := map[string]int{}
	refuse := map[string]bool{"create": true}
	fake.Refuse = func(op string, obj metav1.Object) error {
		if obj.GetName() != cartIngress.Name {
			return nil
		}
		attempts[op]++
		if refuse[op] {
			return tooLarge
		}
		return nil
	}
	frontendEgress := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: frontend, Direction: v1alpha1.DirectionEgress,
		Peer: cart, Protocol: "tcp", Port: 8080}
	ld := plog.NewLogs()
	frontendEgress.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	must(t, w.ConsumeLogs(context.Background(), ld))
	learn(t, w, 8080)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatalf("a refused write is an error to retry: %v", errs)
	}
	if got := fake.Proposals(); len(got) != 1 || got[0].Name != "deployment-frontend-egress" {
		t.Fatalf("proposals %+v, want the other one written", got)
	}
	if ev := fake.Events(); len(ev) != 1 || ev[0].Reason != v1alpha1.EventReasonWriteRefused || ev[0].Type != corev1.EventTypeWarning ||
		ev[0].Object != cartIngress {
		t.Fatalf("events %+v", ev)
	}
	if q := queuedWrites(fake); len(q) != 0 {
		t.Fatalf("queued %v after a refusal", q)
	}
	if w.agg.unwritten() != 0 {
		t.Fatal("a refused proposal counts as unwritten")
	}
	// A new term checks every proposal; the refused one, as it was, is not tried.
	fake.Follow()
	fake.Lead()
	fake.Drain()
	learn(t, w, 8080) // known already
	fake.Drain()
	if attempts["create"] != 1 {
		t.Fatalf("%d creates tried, want 1", attempts["create"])
	}
	// A new edge tries again.
	learn(t, w, 8443)
	fake.Drain()
	if attempts["create"] != 2 {
		t.Fatalf("%d creates tried after a new edge, want 2", attempts["create"])
	}
	refuse["create"] = false
	learn(t, w, 9090)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(fake.Proposals()) != 2 {
		t.Fatal("the proposal was not written once the API server took it")
	}

	// A refused update of a proposal that exists says so on the proposal.
	refuse["update"] = true
	learn(t, w, 7000)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	p := fake.Proposals()[0]
	if p.Name != cartIngress.Name {
		t.Fatalf("first proposal %s", p.Name)
	}
	if msg := assertCondition(t, p, v1alpha1.ConditionWritten, metav1.ConditionFalse, v1alpha1.ReasonRefused); !strings.Contains(msg, "limit is 3145728") {
		t.Errorf("message %q does not have the API server's answer", msg)
	}
	if len(p.Spec.Kubernetes.Ingress[0].Ports) != 3 {
		t.Fatalf("ports %+v, want 8080, 8443 and 9090", p.Spec.Kubernetes.Ingress[0].Ports)
	}
	fake.Follow()
	fake.Lead()
	fake.Drain()
	if attempts["update"] != 1 {
		t.Fatalf("%d updates tried, want 1", attempts["update"])
	}
	refuse["update"] = false
	learn(t, w, 7001)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	p = fake.Proposals()[0]
	assertCondition(t, p, v1alpha1.ConditionWritten, metav1.ConditionTrue, v1alpha1.ReasonAccepted)
	if len(p.Spec.Kubernetes.Ingress[0].Ports) != 5 {
		t.Fatalf("ports %+v, want all five", p.Spec.Kubernetes.Ingress[0].Ports)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// queuedWrites is what the writer queued, without its look at each proposal
// when its Stable window ends (stable_after, a day by default).
func queuedWrites(fake *enforcerextensiontest.Enforcer) map[types.NamespacedName]time.Duration {
	q := fake.Queued()
	for name, d := range q {
		if d > time.Hour {
			delete(q, name)
		}
	}
	return q
}
