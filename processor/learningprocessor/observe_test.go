package learningprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// observations returns what the processor handed on as observations: the
// learned edges' and the left-out edges'.
func observations(sink *consumertest.LogsSink) (learned, leftOut []learning.Observation) {
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var o learning.Observation
			isEdge, ok := o.ReadFrom(lr)
			switch {
			case ok && isEdge:
				learned = append(learned, o)
			case ok:
				leftOut = append(leftOut, o)
			}
		})
	}
	return learned, leftOut
}

// TestObservesEveryFlowSideOnceABatch: a batch hands each learned edge on
// once with the number of its flows, and a side whose peer is left out (the
// Internet, with outside_peers drop) as an observation of its own.
func TestObservesEveryFlowSideOnceABatch(t *testing.T) {
	p, _, sink := startLearning(t)
	f := ciliumFlow("10.0.0.1", "10.0.0.2", 8080, flow.OutcomeAllowed)
	out := ciliumFlow("10.0.0.1", "198.51.100.20", 443, flow.OutcomeAllowed)
	out.Reporter, out.Direction = flow.ReporterSource, flow.DirectionEgress
	out.Destination.External = flow.ExternalWorld
	consume(t, p, f, f, f, out, out)

	learned, leftOut := observations(sink)
	if len(learned) != 2 {
		t.Fatalf("%d learned edges with observations, want 2 (frontend's egress, cart's ingress): %+v", len(learned), learned)
	}
	for _, o := range learned {
		if o.Flows != 3 || o.Class != v1alpha1.PeerClassWorkload || o.Time.IsZero() {
			t.Errorf("learned edge %+v: want 3 flows of a Workload peer, with a time", o)
		}
	}
	if len(leftOut) != 1 {
		t.Fatalf("%d left-out observations, want 1: %+v", len(leftOut), leftOut)
	}
	o := leftOut[0]
	if o.Workload != frontend || o.Direction != v1alpha1.DirectionEgress || o.Class != v1alpha1.PeerClassExternal ||
		o.PeerAddress != "198.51.100.20" || o.Port != 443 || o.Flows != 2 {
		t.Fatalf("left-out observation %+v", o)
	}
}

// TestObserveOff hands learned edges on without observations.
func TestObserveOff(t *testing.T) {
	_, fake, _ := startLearning(t)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.Observe = false
	p, sink := fake.StartLogsProcessorWithConfig(t, NewFactory(), cfg)
	out := ciliumFlow("10.0.0.1", "198.51.100.20", 443, flow.OutcomeAllowed)
	out.Destination.External = flow.ExternalWorld
	consume(t, p, ciliumFlow("10.0.0.1", "10.0.0.2", 8080, flow.OutcomeAllowed), out)
	edges, _ := emitted(sink)
	learned, leftOut := observations(sink)
	if len(edges) != 2 || len(learned) != 0 || len(leftOut) != 0 {
		t.Fatalf("%d edges, %d learned with observations, %d left out: want 2, 0, 0", len(edges), len(learned), len(leftOut))
	}
}
