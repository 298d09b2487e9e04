package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// The guarded namespace's pods, which no fixture has.
var (
	guardedAPI      = flow.Endpoint{Address: "10.0.8.10", Namespace: "guarded", Pod: "api-5c6d7e8f9-a1b2c", Identity: "cluster.local/ns/guarded/sa/api"}
	guardedClient   = flow.Endpoint{Address: "10.0.8.11", Namespace: "guarded", Pod: "client-6d7e8f9a0-d3e4f", Identity: "cluster.local/ns/guarded/sa/client"}
	guardedIntruder = flow.Endpoint{Address: "10.0.8.12", Namespace: "guarded", Pod: "intruder-7e8f9a0b1-g5h6i", Identity: "cluster.local/ns/guarded/sa/intruder"}
)

// apiIngressPolicy is the policy that learning would propose for guarded/api:
// the client, on TCP 8080.
func apiIngressPolicy(name string, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "guarded", Name: name},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: mode, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "api"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "guarded"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8080))}},
				}},
			},
		}},
	}
}

// cilium is a Hubble flow as the destination's node reports it.
func cilium(src, dst flow.Endpoint, port uint32, outcome flow.Outcome) flow.Record {
	dst.Port = port
	return flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: outcome,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Source: src, Destination: dst, Count: 1}
}

func send(t *testing.T, p *pipelinetest.Learning, records ...flow.Record) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range records {
		records[i].AppendTo(sl)
	}
	must(t, p.Processor.ConsumeLogs(context.Background(), ld))
}

// events returns the sink's events of one name, as attribute maps.
func events(sink *consumertest.LogsSink, name string) []map[string]any {
	var out []map[string]any
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if lr.EventName() == name {
				out = append(out, lr.Attributes().AsRaw())
			}
		})
	}
	return out
}

func createPolicy(t *testing.T, p *pipelinetest.Learning, pol *v1alpha1.WorkloadNetworkPolicy) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Create(ctx, pol))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, pol) })
	waitUntil(t, "the cache to see "+pol.Name, 10*time.Second, func() bool {
		got, ok := p.Enforcer.Policy(client.ObjectKeyFromObject(pol))
		return ok && got.Spec.Mode == pol.Spec.Mode
	})
}

func policyNow(t *testing.T, name string) *v1alpha1.WorkloadNetworkPolicy {
	t.Helper()
	var pol v1alpha1.WorkloadNetworkPolicy
	must(t, env.Client.Get(context.Background(), key("guarded", name), &pol))
	return &pol
}

// TestMonitorViolationsOfAKubernetesPolicy: a kubernetes-backend policy in
// monitor mode has no object in the data plane, so the flows that reach its
// workload are judged against spec.kubernetes: a peer or a port that it does not
// allow is a monitor violation, sent at once as an event and merged into the
// status on the sync; a repeat only raises the count. An acknowledgement moves a
// record and sends its event; one for an unknown id stays and is reported.
func TestMonitorViolationsOfAKubernetesPolicy(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	sink := &consumertest.LogsSink{}
	p := pipelinetest.StartPipeline(t, pipelinetest.Options{Violations: sink, StatusSyncInterval: time.Second})
	createPolicy(t, p, apiIngressPolicy("deployment-api-ingress", v1alpha1.PolicyModeMonitor))

	send(t, p,
		cilium(guardedClient, guardedAPI, 8080, flow.OutcomeAllowed),   // allowed by the policy
		cilium(guardedIntruder, guardedAPI, 8080, flow.OutcomeAllowed), // a peer it does not allow
		cilium(guardedClient, guardedAPI, 9090, flow.OutcomeAllowed),   // a port it does not allow
		cilium(guardedIntruder, guardedAPI, 8080, flow.OutcomeAllowed), // a repeat
	)
	observed := events(sink, violationevent.Observed)
	if len(observed) != 3 {
		t.Fatalf("%d observed events, want 3: %v", len(observed), observed)
	}
	want := map[string]any{
		"enforcement.provider": "cilium", "action": "monitor", "network.transport": "tcp", "destination.port": int64(8080),
		"source.workload.namespace": "guarded", "source.workload.kind": "Deployment", "source.workload.name": "intruder",
		"source.workload.identity":       "cluster.local/ns/guarded/sa/intruder",
		"destination.workload.namespace": "guarded", "destination.workload.kind": "Deployment", "destination.workload.name": "api",
		"destination.workload.identity": "cluster.local/ns/guarded/sa/api",
		"policy.ref.namespace":          "guarded", "policy.ref.name": "deployment-api-ingress",
		"source.class": "Workload", "destination.class": "Workload",
		// The release of each end: its ReplicaSet.
		"source.workload.revision": "intruder-7e8f9a0b1", "destination.workload.revision": "api-5c6d7e8f9",
	}
	if fmt.Sprint(observed[0]) != fmt.Sprint(want) {
		t.Errorf("event\n%v\nwant\n%v", observed[0], want)
	}

	var pol *v1alpha1.WorkloadNetworkPolicy
	waitUntil(t, "the status sync", 20*time.Second, func() bool {
		pol = policyNow(t, "deployment-api-ingress")
		return pol.Status.ViolationCount == 3
	})
	st := pol.Status
	if st.ActiveViolationCount != 2 || len(st.Violations) != 2 || st.LastViolationID != 2 {
		t.Fatalf("status %+v", st)
	}
	byID := map[string]v1alpha1.ViolationRecord{}
	for _, r := range st.Violations {
		byID[r.ID] = r
	}
	// The intruder was seen first, so it has id 1.
	if r := byID["1"]; r.Source.Name != "intruder" || r.DstPort != 8080 || r.Protocol != corev1.ProtocolTCP ||
		r.Action != v1alpha1.PolicyModeMonitor || r.Policy.Name != "deployment-api-ingress" || r.Destination.Name != "api" {
		t.Errorf("record 1: %+v", r)
	}
	if r := byID["2"]; r.Source.Name != "client" || r.DstPort != 9090 {
		t.Errorf("record 2: %+v", r)
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionAttributable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Attributable: %+v", c)
	}

	// Acknowledge record 1, and an id that no record has.
	patch := client.MergeFrom(pol.DeepCopy())
	pol.Annotations = map[string]string{
		v1alpha1.AcknowledgeAnnotation("1"): "the intruder is a load test",
		v1alpha1.AcknowledgeAnnotation("7"): "typo",
	}
	must(t, env.Client.Patch(ctx, pol, patch))
	// The status is written first, then the applied annotation removed.
	waitUntil(t, "the acknowledgement", 20*time.Second, func() bool {
		pol = policyNow(t, "deployment-api-ingress")
		_, annotated := pol.Annotations[v1alpha1.AcknowledgeAnnotation("1")]
		return len(pol.Status.AcknowledgedViolations) == 1 && !annotated
	})
	ack := pol.Status.AcknowledgedViolations[0]
	if ack.Violation.ID != "1" || ack.Reason != "the intruder is a load test" || ack.AcknowledgedAt.IsZero() {
		t.Errorf("acknowledged %+v", ack)
	}
	if pol.Status.ActiveViolationCount != 1 || pol.Status.Violations[0].ID != "2" {
		t.Errorf("active after the acknowledgement: %+v", pol.Status.Violations)
	}
	if _, ok := pol.Annotations[v1alpha1.AcknowledgeAnnotation("7")]; !ok {
		t.Error("the annotation for an unknown id was removed")
	}
	if c := meta.FindStatusCondition(pol.Status.Conditions, v1alpha1.ConditionAcknowledged); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != "UnknownViolation" {
		t.Errorf("Acknowledged: %+v", c)
	}
	waitUntil(t, "the acknowledgement event", 10*time.Second, func() bool {
		return len(events(sink, violationevent.Acknowledged)) == 1
	})
	if e := events(sink, violationevent.Acknowledged)[0]; e["violation.id"] != "1" ||
		e["violation.acknowledgement.reason"] != "the intruder is a load test" || e["source.workload.name"] != "intruder" {
		t.Errorf("acknowledgement event %v", e)
	}
}

// TestMonitorViolationsOfACiliumPolicy: a cilium-backend policy in monitor
// mode has no object in the data plane either (Cilium has no per-policy audit
// mode), so its flows are judged against its spec, as the kubernetes
// backend's are: the violations are in its status and sent as events, and
// its evidence says WouldBlock for the same edges.
func TestMonitorViolationsOfACiliumPolicy(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	sink := &consumertest.LogsSink{}
	// The evidence is written at most once per observed_interval: when the
	// policy's first status write comes before the flows, its default (1m)
	// would hold their WouldBlock edges past the wait below.
	p := pipelinetest.StartPipeline(t, pipelinetest.Options{Violations: sink, StatusSyncInterval: time.Second,
		ObservedInterval: time.Second})
	pol := apiIngressPolicy("deployment-api-ingress", v1alpha1.PolicyModeMonitor)
	pol.Spec.Backend = v1alpha1.BackendCilium
	createPolicy(t, p, pol)

	send(t, p,
		cilium(guardedClient, guardedAPI, 8080, flow.OutcomeAllowed),   // allowed by the policy
		cilium(guardedIntruder, guardedAPI, 8080, flow.OutcomeAllowed), // a peer it does not allow
		cilium(guardedClient, guardedAPI, 9090, flow.OutcomeAllowed),   // a port it does not allow
	)
	if observed := events(sink, violationevent.Observed); len(observed) != 2 {
		t.Fatalf("%d observed events, want 2: %v", len(observed), observed)
	}
	waitUntil(t, "the status sync", 20*time.Second, func() bool {
		pol = policyNow(t, "deployment-api-ingress")
		return pol.Status.ViolationCount == 2 && pol.Status.WouldBlockEdges > 0
	})
	got := map[string]bool{}
	for _, r := range pol.Status.Violations {
		if r.Action != v1alpha1.PolicyModeMonitor {
			t.Errorf("record %+v: action %s, want monitor", r, r.Action)
		}
		got[fmt.Sprintf("%s:%d", r.Source.Name, r.DstPort)] = true
	}
	if !got["intruder:8080"] || !got["client:9090"] || len(got) != 2 {
		t.Errorf("violations %v, want intruder:8080 and client:9090", got)
	}
	blocked := map[string]bool{}
	for _, o := range pol.Status.Observed {
		if o.Verdict == v1alpha1.VerdictWouldBlock {
			blocked[fmt.Sprintf("%s:%d", o.Peer.Name, o.Port)] = true
		}
	}
	if fmt.Sprint(blocked) != fmt.Sprint(got) {
		t.Errorf("evidence WouldBlock %v, violations %v: they disagree", blocked, got)
	}
}

// TestProtectViolationsAndAttribution: in protect mode the data plane's
// denials are the violations, at the end that enforces them; a flow the policy
// allows is none. With two policies for one workload and direction, a denial
// that names neither is counted and reported on both, never guessed.
func TestProtectViolationsAndAttribution(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	sink := &consumertest.LogsSink{}
	p := pipelinetest.StartPipeline(t, pipelinetest.Options{Violations: sink, StatusSyncInterval: time.Second})
	createPolicy(t, p, apiIngressPolicy("api-protect", v1alpha1.PolicyModeProtect))

	egressReport := cilium(guardedIntruder, guardedAPI, 8080, flow.OutcomeDenied)
	egressReport.Reporter, egressReport.Direction = flow.ReporterSource, flow.DirectionEgress
	send(t, p,
		cilium(guardedIntruder, guardedAPI, 8080, flow.OutcomeDenied),
		cilium(guardedClient, guardedAPI, 8080, flow.OutcomeAllowed),
		egressReport, // the source's end: not where api's ingress is enforced
	)
	observed := events(sink, violationevent.Observed)
	if len(observed) != 1 || observed[0]["action"] != "protect" || observed[0]["source.workload.name"] != "intruder" {
		t.Fatalf("observed %v", observed)
	}
	if n := p.Counter(violationprocessor.MetricDismissed, map[string]string{"reason": "other_side"}); n != 1 {
		t.Errorf("other_side dismissals: %d", n)
	}
	if n := p.Counter(violationprocessor.MetricDismissed, map[string]string{"reason": "allowed"}); n != 1 {
		t.Errorf("allowed dismissals: %d", n)
	}
	waitUntil(t, "the protect record", 20*time.Second, func() bool {
		pol := policyNow(t, "api-protect")
		return pol.Status.ViolationCount == 1 && len(pol.Status.Violations) == 1 && pol.Status.Violations[0].Action == v1alpha1.PolicyModeProtect
	})

	// A second policy for the same workload and direction.
	createPolicy(t, p, apiIngressPolicy("api-second", v1alpha1.PolicyModeProtect))
	send(t, p, cilium(guardedIntruder, guardedAPI, 8443, flow.OutcomeDenied))
	if n := p.Counter(violationprocessor.MetricUnattributed, nil); n != 1 {
		t.Errorf("unattributed: %d, want 1", n)
	}
	named := cilium(guardedIntruder, guardedAPI, 8443, flow.OutcomeDenied)
	named.Policy = flow.PolicyRef{Kind: "NetworkPolicy", Namespace: "guarded", Name: "api-second"}
	send(t, p, named)
	for _, name := range []string{"api-protect", "api-second"} {
		waitUntil(t, name+" to report the shared target", 20*time.Second, func() bool {
			c := meta.FindStatusCondition(policyNow(t, name).Status.Conditions, v1alpha1.ConditionAttributable)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "SharedTarget"
		})
	}
	waitUntil(t, "the named denial on api-second", 20*time.Second, func() bool {
		return policyNow(t, "api-second").Status.ViolationCount == 1
	})
	if n := policyNow(t, "api-protect").Status.ViolationCount; n != 1 {
		t.Errorf("api-protect counted %d, want its first 1 only", n)
	}
}

// TestUnjoinedIstioDecision: a ztunnel decision line that no access line joined
// has the source's address and the policy, but no destination and no port. The
// policy it names says whose violation it is: the record has port 0.
func TestUnjoinedIstioDecision(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	sink := &consumertest.LogsSink{}
	p := pipelinetest.StartPipeline(t, pipelinetest.Options{Violations: sink, StatusSyncInterval: time.Second})
	pol := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "guarded", Name: "api-mesh"},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeMonitor, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendIstio, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "api"},
			Istio:     &v1alpha1.IstioPolicySpec{Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "api"}}},
		}},
	}
	createPolicy(t, p, pol)
	send(t, p, flow.Record{Time: time.Now(), Provider: flow.ProviderIstio, Outcome: flow.OutcomeDryRunDenied,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Source: flow.Endpoint{Address: guardedIntruder.Address, Port: 41234},
		Policy: flow.PolicyRef{Kind: "AuthorizationPolicy", Namespace: "guarded", Name: "api-mesh"}, Count: 1})
	observed := events(sink, violationevent.Observed)
	if len(observed) != 1 || observed[0]["destination.workload.name"] != "api" || observed[0]["destination.port"] != int64(0) ||
		observed[0]["source.workload.name"] != "intruder" || observed[0]["action"] != "monitor" {
		t.Fatalf("observed %v", observed)
	}
}
