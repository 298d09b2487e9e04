package learningprocessor

import (
	"context"
	"testing"

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
// afresh through the batch's memo of ends and policies, in the same run.
func BenchmarkProcessLogs(b *testing.B) {
	ld := repeatedBatch(hubbleFixture(), benchBatch)
	for _, decideEachFlow := range []bool{false, true} {
		name := "replay"
		if decideEachFlow {
			name = "decide-each-flow"
		}
		b.Run(name, func(b *testing.B) {
			p := newBenchProcessor(b)
			p.decideEachFlow = decideEachFlow
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.processLogs(context.Background(), ld); err != nil {
					b.Fatal(err)
				}
			}
			perFlow := float64(b.N * benchBatch)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perFlow, "ns/flow")
			b.ReportMetric(float64(testing.AllocsPerRun(3, func() { _, _ = p.processLogs(context.Background(), ld) }))/benchBatch, "allocs/flow")
		})
	}
}
