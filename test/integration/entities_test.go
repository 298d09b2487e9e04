package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// TestEntitiesOnCalicoAndIstio: with outside_peers entities, a Calico host
// endpoint (Goldmane names it, with no address) and an Istio source without an
// identity at a host-network pod's address (its node's) are learned as the
// nodes; promoted to protect, the NetworkPolicy and the AuthorizationPolicy
// allow the Nodes' internal addresses, on the learned ports.
func TestEntitiesOnCalicoAndIstio(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	ctx := context.Background()
	createNode(t, "entities-node", "172.18.0.2")

	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{OutsidePeers: learningprocessor.OutsidePeersEntities})}
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	prometheus := flow.Endpoint{Address: "10.0.3.40", Namespace: "monitoring", Pod: "prometheus-6b7c8d9e0-lmnop"}
	calico := flow.Record{Time: time.Now(), Provider: flow.ProviderCalico, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1,
		Source:      prometheus,
		Destination: flow.Endpoint{Address: "node-a", Port: 10250, External: flow.ExternalHost}}
	istio := flow.Record{Time: time.Now(), Provider: flow.ProviderIstio, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
		Source:      flow.Endpoint{Address: "172.18.0.2"},
		Destination: flow.Endpoint{Address: "10.0.3.40", Namespace: "monitoring", Pod: "prometheus-6b7c8d9e0-lmnop", Port: 9090}}
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	calico.AppendTo(sl)
	istio.AppendTo(sl)
	must(t, p.Processor.ConsumeLogs(ctx, ld))

	want := map[string]string{
		"deployment-prometheus-egress":  "kubernetes Nodes TCP/10250",
		"deployment-prometheus-ingress": "istio Nodes TCP/9090",
	}
	for name, w := range want {
		var got string
		waitUntil(t, "the nodes in "+name, 30*time.Second, func() bool {
			var wnpp v1alpha1.WorkloadNetworkPolicyProposal
			if env.Client.Get(ctx, key("monitoring", name), &wnpp) != nil || len(wnpp.Spec.Outside) != 1 {
				return false
			}
			o := wnpp.Spec.Outside[0]
			if len(o.Ports) != 1 {
				return false
			}
			got = string(wnpp.Spec.Backend) + " " + string(o.Entity) + " " + string(*o.Ports[0].Protocol) + "/" + o.Ports[0].Port.String()
			return got == w && wnpp.Status.WouldBlockEdges == 0
		})
		var wnpp v1alpha1.WorkloadNetworkPolicyProposal
		must(t, env.Client.Get(ctx, key("monitoring", name), &wnpp))
		promote(t, &wnpp, v1alpha1.PolicyModeProtect)
	}

	waitUntil(t, "the NetworkPolicy to allow the node", 30*time.Second, func() bool {
		var np networkingv1.NetworkPolicy
		if env.Client.Get(ctx, key("monitoring", "deployment-prometheus-egress"), &np) != nil {
			return false
		}
		return slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return len(r.To) == 1 && r.To[0].IPBlock != nil && r.To[0].IPBlock.CIDR == "172.18.0.2/32" &&
				len(r.Ports) == 1 && r.Ports[0].Port.IntValue() == 10250
		})
	})
	waitUntil(t, "the AuthorizationPolicy to allow the node", 30*time.Second, func() bool {
		var ap securityv1.AuthorizationPolicy
		if env.Client.Get(ctx, key("monitoring", "deployment-prometheus-ingress"), &ap) != nil {
			return false
		}
		for _, r := range ap.Spec.Rules {
			if len(r.From) == 1 && slices.Equal(r.From[0].Source.IpBlocks, []string{"172.18.0.2/32"}) &&
				len(r.To) == 1 && slices.Equal(r.To[0].Operation.Ports, []string{"9090"}) {
				return true
			}
		}
		return false
	})
}
