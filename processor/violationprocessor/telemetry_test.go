package violationprocessor

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/kubewarden/network-enforcer/internal/metadatatest"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor/internal/metadata"
)

// TestShutdownUnregistersCallbacks: the processor's observable instruments
// report while it runs and nothing once it has shut down.
func TestShutdownUnregistersCallbacks(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewFactory()
	proc, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig(), consumertest.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	metadatatest.CheckCallbacksUnregistered(t, tel, proc, "network_enforcer_observed_edges_tracked")
}
