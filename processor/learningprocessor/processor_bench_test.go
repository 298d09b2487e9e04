package learningprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

// benchBatch is a receiver's full batch (the flow sources' default size).
const benchBatch = 1024

// newBenchProcessor returns a learning processor on the fixture's enforcer,
// with the default configuration and no-op telemetry.
func newBenchProcessor(tb testing.TB) *learningProcessor {
	tb.Helper()
	p, err := newLearningProcessor(processortest.NewNopSettings(metadata.Type), createDefaultConfig().(*Config))
	if err != nil {
		tb.Fatal(err)
	}
	p.enforcer = fixtureEnforcer()
	return p
}

// BenchmarkProcessLogs learns a full batch of the Hubble fixture's flows
// repeated, as a busy node sends them, and reports the cost per flow:
// "replay" as the processor runs, a flow of a key the batch has seen
// repeating its decisions, against "decide-each-flow", every flow decided
// afresh through the batch's memo of ends and policies, and
// "replay-pooling-on", with pdata's pooling gate on, in the same run. What
// the processor hands on is released once handed on, as the collector's
// pipeline does.
func BenchmarkProcessLogs(b *testing.B) {
	ld := repeatedBatch(hubbleFixture(), benchBatch)
	for _, bc := range []struct {
		name                    string
		decideEachFlow, pooling bool
	}{
		{name: "replay"},
		{name: "decide-each-flow", decideEachFlow: true},
		{name: "replay-pooling-on", pooling: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			setGate(b, "pdata.useProtoPooling", bc.pooling)
			p := newBenchProcessor(b)
			p.decideEachFlow = bc.decideEachFlow
			process := func() {
				out, err := p.processLogs(context.Background(), ld)
				if err != nil {
					b.Fatal(err)
				}
				plog.NewLogs().MoveTo(out) // released: into pdata's pools with the gate on
			}
			b.ReportAllocs()
			for b.Loop() {
				process()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/flow")
			b.ReportMetric(testing.AllocsPerRun(3, process)/benchBatch, "allocs/flow")
		})
	}
}

// setGate sets a feature gate for the benchmark, and back after it.
func setGate(b *testing.B, id string, on bool) {
	b.Helper()
	if err := featuregate.GlobalRegistry().Set(id, on); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = featuregate.GlobalRegistry().Set(id, false) })
}
