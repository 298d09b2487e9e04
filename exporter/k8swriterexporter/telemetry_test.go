package k8swriterexporter

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
)

// TestShutdownUnregistersCallbacks: the writer's observable instruments report
// while it runs and nothing once it has shut down. The collector's meter
// provider outlives its components (a reload builds new ones), and a callback
// left registered would report a stopped writer beside its successor.
func TestShutdownUnregistersCallbacks(t *testing.T) {
	ctx := context.Background()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(ctx) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewFactory()
	exp, err := f.CreateLogs(ctx, set, f.CreateDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	gauges := []string{MetricUnwritten, "network_enforcer_observed_edges_tracked"}
	for _, name := range gauges {
		if _, err := tel.GetMetric(name); err != nil {
			t.Fatalf("before Shutdown: %v", err)
		}
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range gauges {
		if m, err := tel.GetMetric(name); err == nil {
			t.Errorf("%s is still reported after Shutdown: %v", name, m)
		}
	}
}
