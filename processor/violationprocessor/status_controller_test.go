package violationprocessor

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var (
	cart       = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}
	intruder   = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "intruder"}
	cartPolicy = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
)

// startViolations starts a violation processor on a fake enforcer with cart
// (10.0.0.2), intruder (10.0.0.3) and a monitor-mode policy that lets only
// frontend's pods reach cart on 8080.
func startViolations(t *testing.T) (processor.Logs, *enforcerextensiontest.Enforcer, *consumertest.LogsSink) {
	t.Helper()
	fake := enforcerextensiontest.New()
	nsLabels := map[string]string{"kubernetes.io/metadata.name": "shop"}
	fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "cart"}, NamespaceLabels: nsLabels}, "10.0.0.2")
	fake.AddWorkload(intruder, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "intruder"}, NamespaceLabels: nsLabels}, "10.0.0.3")
	fake.SetPolicy(&v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: cartPolicy.Namespace, Name: cartPolicy.Name, Generation: 1},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeMonitor, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8080))}},
				}},
			},
		}},
	})
	p, sink := fake.StartLogsProcessor(t, newFactory(enforcerextensiontest.FindWriting))
	return p, fake, sink
}

// sendCandidate hands the processor an allowed flow from intruder to cart on
// port, as the learning processor hands on a side that a policy governs.
func sendCandidate(t *testing.T, p processor.Logs, port uint32) {
	t.Helper()
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterDestination,
		Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
		Source: flow.Endpoint{Address: "10.0.0.3"}, Destination: flow.Endpoint{Address: "10.0.0.2", Port: port}}
	consumeCandidate(t, p, &rec, v1alpha1.DirectionIngress)
}

// consumeCandidate hands the processor rec as a candidate of cart in
// direction d, as the learning processor hands on a side that a policy
// governs (without the peer that learning names: the processor resolves it).
func consumeCandidate(t *testing.T, p interface {
	ConsumeLogs(context.Context, plog.Logs) error
}, rec *flow.Record, d v1alpha1.Direction) {
	t.Helper()
	flows := plog.NewLogs()
	rec.AppendTo(flows.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	ld := plog.NewLogs()
	learning.AppendCandidate(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty(),
		flows.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0), cart, d, nil)
	if err := p.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

func eventsNamed(sink *consumertest.LogsSink, name string) int {
	n := 0
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if lr.EventName() == name {
				n++
			}
		})
	}
	return n
}

// TestStatusSyncMergesWhatWasObserved: a violation's event goes out at once;
// its policy is queued for the sync (its observed edge asks for it a second
// later), and the
// sync writes the record with id 1; a repeat refreshes it under the same id.
func TestStatusSyncMergesWhatWasObserved(t *testing.T) {
	p, fake, sink := startViolations(t)
	sendCandidate(t, p, 8443) // not a port the policy allows
	if n := eventsNamed(sink, violationevent.Observed); n != 1 {
		t.Fatalf("%d observed events, want 1", n)
	}
	// Queued for the sync (30s) and, sooner, for its observed edge's first
	// write (1s): a work queue takes it at the earlier.
	if delay, ok := fake.Queued()[cartPolicy]; !ok || delay != time.Second {
		t.Fatalf("queued %v: want the policy, after a second", fake.Queued())
	}
	fake.Lead()
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	st := fake.PolicyNow(cartPolicy).Status
	if len(st.Violations) != 1 || st.Violations[0].ID != "1" || st.ViolationCount != 1 || st.ActiveViolationCount != 1 ||
		st.Violations[0].Action != v1alpha1.PolicyModeMonitor || st.Violations[0].Source.Name != "intruder" {
		t.Fatalf("status %+v", st)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAttributable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("conditions %+v", st.Conditions)
	}

	sendCandidate(t, p, 8443)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	st = fake.PolicyNow(cartPolicy).Status
	if len(st.Violations) != 1 || st.Violations[0].ID != "1" || st.ViolationCount != 2 {
		t.Fatalf("after a repeat: status %+v", st)
	}
}

// TestAllowedFlowIsNoViolation: a flow that spec.kubernetes allows is judged
// in software and dismissed: no event and no violation record; the status
// sync lists it as an observed edge that the spec allows, used by its rule.
func TestAllowedFlowIsNoViolation(t *testing.T) {
	p, fake, sink := startViolations(t)
	fake.AddWorkload(intruder, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "frontend"},
		NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}, "10.0.0.3")
	sendCandidate(t, p, 8080)
	if n := eventsNamed(sink, violationevent.Observed); n != 0 {
		t.Fatalf("%d events for an allowed flow", n)
	}
	fake.Lead()
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	st := fake.PolicyNow(cartPolicy).Status
	if len(st.Violations) != 0 || st.ViolationCount != 0 {
		t.Fatalf("violations for an allowed flow: %+v", st.Violations)
	}
	if len(st.Observed) != 1 || st.Observed[0].Verdict != v1alpha1.VerdictAllowed || st.Observed[0].Flows != 1 ||
		st.Observed[0].Peer.Name != intruder.Name || st.WouldBlockEdges != 0 {
		t.Fatalf("observed %+v, would block %d", st.Observed, st.WouldBlockEdges)
	}
	if len(st.RuleUse) != 1 || st.RuleUse[0].Flows != 1 || st.RuleUse[0].LastUsed == nil {
		t.Fatalf("rule use %+v", st.RuleUse)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionWouldBlock); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("WouldBlock %+v", c)
	}
}

// TestAcknowledgementMovesTheRecord: an acknowledge annotation moves the record
// to acknowledgedViolations, is removed, and sends its event.
func TestAcknowledgementMovesTheRecord(t *testing.T) {
	p, fake, sink := startViolations(t)
	fake.Lead()
	sendCandidate(t, p, 8443)
	fake.Drain()
	pol := fake.PolicyNow(cartPolicy)
	pol.Annotations = map[string]string{v1alpha1.AcknowledgeAnnotation("1"): "a load test"}
	fake.SetPolicy(pol)
	fake.Changed(cartPolicy)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	pol = fake.PolicyNow(cartPolicy)
	if len(pol.Status.Violations) != 0 || len(pol.Status.AcknowledgedViolations) != 1 ||
		pol.Status.AcknowledgedViolations[0].Reason != "a load test" || len(pol.Annotations) != 0 {
		t.Fatalf("policy %+v", pol)
	}
	if n := eventsNamed(sink, violationevent.Acknowledged); n != 1 {
		t.Fatalf("%d acknowledgement events, want 1", n)
	}
}

// TestRefusedStatusWriteKeepsTheRecords: a status write that the API server
// refuses is recorded as an Event, and its records stay buffered for the
// retry, which writes them once the write goes through.
func TestRefusedStatusWriteKeepsTheRecords(t *testing.T) {
	p, fake, _ := startViolations(t)
	fake.Lead()
	fake.Refuse = func(op string, _ metav1.Object) error {
		if op == "status" {
			return apierrors.NewRequestEntityTooLargeError("the status is too large")
		}
		return nil
	}
	sendCandidate(t, p, 8443)
	if errs := fake.Drain(); errs[cartPolicy] == nil {
		t.Fatal("a refused write reported no error")
	}
	events := fake.Events()
	if len(events) != 1 || events[0].Reason != v1alpha1.EventReasonWriteRefused || events[0].Type != corev1.EventTypeWarning {
		t.Fatalf("events %+v", events)
	}
	fake.Refuse = nil
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if st := fake.PolicyNow(cartPolicy).Status; st.ViolationCount != 1 || len(st.Violations) != 1 {
		t.Fatalf("after the retry: status %+v", st)
	}
}

// TestHandOffWritesWhatIsHeld: on a leader's way out, the processor's own
// Shutdown writes the buffered violation and the observed flows that the write
// spacing held back, at once.
func TestHandOffWritesWhatIsHeld(t *testing.T) {
	p, fake, _ := startViolations(t)
	fake.Lead()
	sendCandidate(t, p, 8443)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	// A second violation within the observed interval: its record waits for
	// the next sync and its flow for the next observed write.
	sendCandidate(t, p, 8443)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if st := fake.PolicyNow(cartPolicy).Status; st.ViolationCount != 2 || st.Observed[0].Flows != 1 {
		t.Fatalf("before the hand-off: %d violations, %d observed flows; want 2 and 1 (spaced)", st.ViolationCount, st.Observed[0].Flows)
	}
	sendCandidate(t, p, 8443)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := fake.PolicyNow(cartPolicy).Status; st.ViolationCount != 3 || st.Observed[0].Flows != 3 {
		t.Fatalf("after the hand-off: %d violations, %d observed flows; want 3 and 3", st.ViolationCount, st.Observed[0].Flows)
	}
}
