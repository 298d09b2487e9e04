package flowsource

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkDropped counts drops on the SDK's meter, as the collector's own
// telemetry does: a Hubble stream counts one for most replies.
func BenchmarkDropped(b *testing.B) {
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m := set.MeterProvider.Meter("bench")
	accepted, err := m.Int64Counter(MetricFlowsAccepted)
	if err != nil {
		b.Fatal(err)
	}
	dropped, err := m.Int64Counter(MetricFlowsDropped)
	if err != nil {
		b.Fatal(err)
	}
	tel := NewTelemetry(component.MustNewID("hubble"), Counters{Accepted: accepted, Dropped: dropped})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tel.Dropped(ctx, DropReply)
	}
}
