package k8swriterexporter

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/learning"
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

// TestStandardExporterCounts: the writer runs in the collector's exporter
// helper, which counts what it took in the standard exporter metric.
func TestStandardExporterCounts(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := newFactory(enforcerextensiontest.FindWriting)
	exp, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	fake := enforcerextensiontest.New()
	if err := exp.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, port := range []uint32{80, 443} {
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Peer: frontend, Protocol: "tcp", Port: port}
		e.AppendTo(sl)
	}
	if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	m, err := tel.GetMetric("otelcol_exporter_sent_log_records")
	if err != nil {
		t.Fatal(err)
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 2 {
		t.Fatalf("otelcol_exporter_sent_log_records %+v, want 2", m.Data)
	}
}
