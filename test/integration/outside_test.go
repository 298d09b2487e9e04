package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// TestIstioSourceOutsideTheMeshAsIPBlock: with outside_peers ip_blocks, the
// ztunnel fixture's connection from outside the mesh (no identity, from
// 10.0.0.5) teaches the destination's proposal a source.ipBlocks rule beside
// its principals. (With the default, drop, the outage test sees the same
// proposals with principals only.)
func TestIstioSourceOutsideTheMeshAsIPBlock(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{OutsidePeers: learningprocessor.OutsidePeersIPBlocks})}
	r, addr := ztunnelReceiver(t, p.Settings, p.Processor)
	p.Add(t, r)
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	lines, err := dataplanetest.LoadZtunnel(repoFile(t, dataplanetest.ZtunnelFixture))
	must(t, err)
	sendLines(t, addr, lines)

	var orders v1alpha1.WorkloadNetworkPolicyProposal
	// The other tests of the package learn this proposal with the default.
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &orders) })
	waitUntil(t, "the orders proposal with the outside source", time.Minute, func() bool {
		if env.Client.Get(context.Background(), key("store", "deployment-orders-ingress"), &orders) != nil || orders.Spec.Istio == nil {
			return false
		}
		for _, rule := range orders.Spec.Istio.Rules {
			for _, from := range rule.From {
				if slices.Equal(from.Source.IPBlocks, []string{"10.0.0.5/32"}) && len(from.Source.Principals) == 0 &&
					len(rule.To) == 1 && slices.Equal(rule.To[0].Operation.Ports, []string{"8080"}) {
					return true
				}
			}
		}
		return false
	})
	principals := 0
	for _, rule := range orders.Spec.Istio.Rules {
		principals += len(rule.From[0].Source.Principals)
	}
	if principals == 0 {
		t.Fatalf("the orders proposal lost its principals: %+v", orders.Spec.Istio.Rules)
	}
}
