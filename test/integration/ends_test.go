package integration

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// TestEndsThatTeachNothing: flows to or from the outside world, a node, a
// host-network pod, a bare pod, or from an Istio source without an identity
// create no proposal; each side that teaches nothing is counted by reason.
func TestEndsThatTeachNothing(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	p := startPipeline(t, sources{})
	prometheus := flow.Endpoint{Address: "10.0.3.40", Namespace: "monitoring", Pod: "prometheus-6b7c8d9e0-lmnop"}
	cilium := func(src, dst flow.Endpoint) flow.Record {
		return flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
			Reporter: flow.ReporterSource, Direction: flow.DirectionEgress, Transport: flow.TransportTCP,
			Source: src, Destination: dst, Count: 1}
	}
	world := flow.Endpoint{Address: "203.0.113.7", Port: 443, External: flow.ExternalWorld}
	node := flow.Endpoint{Address: "172.18.0.1", Port: 10250, External: flow.ExternalHost}
	hostNetworkPod := flow.Endpoint{Address: "172.18.0.2", Port: 10249}
	barePod := flow.Endpoint{Address: "10.0.9.10", Namespace: "default", Pod: "debug-shell", Port: 8080}
	istio := cilium(flow.Endpoint{Address: "10.0.3.41"}, flow.Endpoint{Address: "10.0.3.40", Port: 9090})
	istio.Provider = flow.ProviderIstio

	records := []flow.Record{
		cilium(prometheus, world), cilium(prometheus, node), cilium(prometheus, hostNetworkPod),
		cilium(prometheus, barePod), istio,
	}
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range records {
		records[i].AppendTo(sl)
	}
	must(t, p.Processor.ConsumeLogs(context.Background(), ld))

	if n := p.Counter(learningprocessor.MetricEdges, nil); n != 0 {
		t.Fatalf("%d edges learned", n)
	}
	for reason, want := range map[string]int64{
		"peer_external": 1, "target_external": 1, "peer_host": 1, "target_host": 1,
		"peer_host_network": 1, "target_host_network": 1, "peer_bare_pod": 1, "target_bare_pod": 1,
		"peer_no_identity": 1,
	} {
		if got := p.Counter(learningprocessor.MetricDropped, map[string]string{"reason": reason}); got != want {
			t.Errorf("dropped for %s: %d, want %d", reason, got, want)
		}
	}
}
