package integration

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// TestUserProposalIsLeftAlone: a proposal that a person made, with the name the
// writer would use, is neither changed nor deleted when flows teach more.
func TestUserProposalIsLeftAlone(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	mine := &v1alpha1.WorkloadNetworkPolicyProposal{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "deployment-probe-egress"},
		Spec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionEgress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "probe"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			},
		},
	}
	must(t, env.Client.Create(ctx, mine))
	t.Cleanup(func() { _ = env.Client.Delete(ctx, mine) })

	p := startPipeline(t, sources{})
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1,
		Source: flow.Endpoint{Address: "10.0.1.31"}, Destination: flow.Endpoint{Address: "10.244.1.15", Port: 7000}}
	ld := plog.NewLogs()
	rec.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	must(t, p.Processor.ConsumeLogs(ctx, ld))
	if n := p.Settled(t, learningprocessor.MetricEdges, time.Second); n != 2 {
		t.Fatalf("%d edges", n)
	}
	// The reports side is new: its proposal is written, and a round later the
	// probe side would have been too.
	p.Settled(t, k8swriterexporter.MetricWrites, 2*time.Second)

	var now v1alpha1.WorkloadNetworkPolicyProposal
	must(t, env.Client.Get(ctx, key("default", "deployment-probe-egress"), &now))
	if now.ResourceVersion != mine.ResourceVersion {
		t.Fatalf("the person's proposal was changed: %+v", now.Spec)
	}
}
