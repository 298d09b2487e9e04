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
	tel, err := NewTelemetry(set, component.MustNewID("hubble"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tel.Dropped(ctx, DropReply)
	}
}
