package learningprocessor

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var (
	frontend = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "frontend"}
	cart     = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}
)

// startLearning starts a learning processor on a fake enforcer that knows
// frontend at 10.0.0.1 and cart at 10.0.0.2, and a host-network pod at
// 10.0.0.9, and returns what it hands on.
func startLearning(t *testing.T) (processor.Logs, *enforcerextensiontest.Enforcer, *consumertest.LogsSink) {
	t.Helper()
	fake := enforcerextensiontest.New()
	fake.AddWorkload(frontend, enforcerextensiontest.WorkloadInfo{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}, "10.0.0.1")
	fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}}, "10.0.0.2")
	fake.Unresolved("10.0.0.9", workload.UnresolvedHostNetwork)
	p, sink := fake.StartLogsProcessor(t, NewFactory())
	return p, fake, sink
}

func ciliumFlow(src, dst string, port uint32, outcome flow.Outcome) flow.Record {
	return flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: outcome, Reporter: flow.ReporterDestination,
		Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
		Source: flow.Endpoint{Address: src}, Destination: flow.Endpoint{Address: dst, Port: port}}
}

func consume(t *testing.T, p processor.Logs, records ...flow.Record) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range records {
		records[i].AppendTo(sl)
	}
	if err := p.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// emitted returns the learned edges and the violation candidates' targets
// that the processor handed on.
func emitted(sink *consumertest.LogsSink) (edges []learning.Edge, candidates []string) {
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var e learning.Edge
			if e.ReadFrom(lr) {
				edges = append(edges, e)
				return
			}
			if target, d, ok := learning.ReadCandidate(lr); ok {
				candidates = append(candidates, target.String()+"/"+string(d))
			}
		})
	}
	return edges, candidates
}

// TestLearnsBothSidesOnce: an allowed Cilium flow between two workloads
// teaches the source's egress and the destination's ingress, once a batch
// however often it repeats.
func TestLearnsBothSidesOnce(t *testing.T) {
	p, _, sink := startLearning(t)
	f := ciliumFlow("10.0.0.1", "10.0.0.2", 8080, flow.OutcomeAllowed)
	consume(t, p, f, f, f)
	edges, candidates := emitted(sink)
	if len(candidates) != 0 || len(edges) != 2 {
		t.Fatalf("edges %+v, candidates %v", edges, candidates)
	}
	want := map[learning.Edge]bool{
		{Backend: v1alpha1.BackendKubernetes, Workload: frontend, Direction: v1alpha1.DirectionEgress, Peer: cart, Protocol: "tcp", Port: 8080}:  true,
		{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress, Peer: frontend, Protocol: "tcp", Port: 8080}: true,
	}
	for _, e := range edges {
		if !want[e] {
			t.Errorf("unexpected edge %+v", e)
		}
	}
}

// TestPolicyTurnsASideIntoACandidate: the side that a policy governs goes on
// as a violation candidate; the other side is still learned.
func TestPolicyTurnsASideIntoACandidate(t *testing.T) {
	p, fake, sink := startLearning(t)
	fake.SetPolicy(&v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-cart-ingress"},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
		}},
	})
	consume(t, p, ciliumFlow("10.0.0.1", "10.0.0.2", 8080, flow.OutcomeAllowed))
	edges, candidates := emitted(sink)
	if len(edges) != 1 || edges[0].Direction != v1alpha1.DirectionEgress || edges[0].Workload != frontend {
		t.Fatalf("edges %+v", edges)
	}
	if len(candidates) != 1 || candidates[0] != "shop/Deployment/cart/Ingress" {
		t.Fatalf("candidates %v", candidates)
	}
}

// TestEndsOutsideTheScopeTeachNothing: an external source, a host-network pod
// and a denied flow teach nothing, and the processor hands nothing on.
func TestEndsOutsideTheScopeTeachNothing(t *testing.T) {
	p, _, sink := startLearning(t)
	external := ciliumFlow("203.0.113.7", "10.0.0.2", 8080, flow.OutcomeAllowed)
	external.Source.External = flow.ExternalWorld
	consume(t, p,
		external,
		ciliumFlow("10.0.0.9", "10.0.0.2", 8080, flow.OutcomeAllowed),
		ciliumFlow("10.0.0.1", "10.0.0.2", 8080, flow.OutcomeDenied),
	)
	// The external and host-network ends still let cart's ingress learn
	// nothing (their peer does not resolve), and frontend's egress of a
	// denied flow is not learned.
	if edges, candidates := emitted(sink); len(edges) != 0 || len(candidates) != 0 {
		t.Fatalf("edges %+v, candidates %v", edges, candidates)
	}
}
