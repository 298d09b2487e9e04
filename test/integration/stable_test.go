package integration

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// stableWindow is the writer's stable_after in the Stable test.
const stableWindow = 4 * time.Second

// sendCalls sends one flow of store/batch to web/frontend on each port.
func sendCalls(t *testing.T, p *pipeline, ports ...uint32) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1,
		Source: batchPod, Destination: frontendPod}
	for _, port := range ports {
		rec.Destination.Port = port
		rec.AppendTo(sl)
	}
	must(t, p.Processor.ConsumeLogs(context.Background(), ld))
}

// stableOf is the batch egress proposal's Stable condition and last new edge.
func stableOf(t *testing.T) (*metav1.Condition, *v1alpha1.NewEdge, v1alpha1.WorkloadNetworkPolicyProposal) {
	t.Helper()
	got, ok := batchEgressProposal(t)
	if !ok {
		return nil, nil, got
	}
	return meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStable), got.Status.LastNewEdge, got
}

// TestStableAfterTheLastNewEdge: a proposal is not Stable while its last new
// edge is recent, and names it; it turns Stable once stable_after passed with
// no new edge, without a flow to wake it; more flows of the edges it has
// leave it Stable; a new port makes it learn again, and it settles again.
func TestStableAfterTheLastNewEdge(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	p := &pipeline{Learning: pipelinetest.StartPipeline(t, pipelinetest.Options{ObservedInterval: time.Second, StableAfter: stableWindow})}
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	t.Cleanup(func() {
		if _, _, got := stableOf(t); got.Name != "" {
			_ = env.Client.Delete(context.Background(), &got)
		}
	})

	sent := time.Now()
	sendCalls(t, p, 9090)
	var c *metav1.Condition
	var last *v1alpha1.NewEdge
	waitUntil(t, "the proposal, learning, with its new edge", time.Minute, func() bool {
		c, last, _ = stableOf(t)
		return c != nil && last != nil
	})
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonLearning || last.Peer == nil ||
		last.Peer.Name != "frontend" || last.Port != 9090 || last.Protocol != "TCP" {
		t.Fatalf("Stable %+v, last new edge %+v: want Learning with web/frontend TCP 9090", c, last)
	}
	t.Logf("learning: %s", c.Message)

	// Flows of the edge it has, within the window: nothing new.
	sendCalls(t, p, 9090, 9090)
	waitUntil(t, "Stable once the window passed", time.Minute, func() bool {
		c, _, _ = stableOf(t)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	took := time.Since(sent)
	if c.Reason != v1alpha1.ReasonNoNewEdges {
		t.Fatalf("Stable %+v", c)
	}
	if _, again, _ := stableOf(t); !again.Time.Equal(&last.Time) {
		t.Fatalf("flows of a known edge moved the last new edge from %v to %v", last.Time, again.Time)
	}
	t.Logf("stable %s after the first flow (window %s): %s", took.Round(100*time.Millisecond), stableWindow, c.Message)

	// More flows of the known edge leave it Stable; a new port does not.
	sendCalls(t, p, 9090)
	sendCalls(t, p, 9191)
	waitUntil(t, "learning again after a new port", time.Minute, func() bool {
		c, last, _ = stableOf(t)
		return c != nil && c.Status == metav1.ConditionFalse && last != nil && last.Port == 9191
	})
	waitUntil(t, "Stable again", time.Minute, func() bool {
		c, _, _ = stableOf(t)
		return c != nil && c.Status == metav1.ConditionTrue
	})
}
