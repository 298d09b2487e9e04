package k8swriterexporter

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/metadatatest"
)

// TestShutdownUnregistersCallbacks: the writer's observable instruments report
// while it runs and nothing once it has shut down.
func TestShutdownUnregistersCallbacks(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewFactory()
	exp, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	metadatatest.CheckCallbacksUnregistered(t, tel, exp, MetricUnwritten, "network_enforcer_observed_edges_tracked")
}
