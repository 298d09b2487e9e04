// Package k8swriterexporter is the Kubernetes writer: it aggregates learning
// events into WorkloadNetworkPolicyProposal objects, the one writer of them,
// written by a controller on the leader only when their content changes.
package k8swriterexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
)

// NewFactory returns the factory of the Kubernetes writer exporter.
func NewFactory() exporter.Factory {
	return newFactory(termwriter.Find)
}

// newFactory is NewFactory with what finds the runner of the writer's
// controller: the test seam.
func newFactory(find termwriter.Finder) exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig, exporter.WithLogs(
		func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
			return createLogs(ctx, set, cfg, find)
		}, metadata.LogsStability))
}

// createLogs builds the writer inside the collector's exporter helper, which
// gives it the standard exporter telemetry (otelcol_exporter_sent_log_records
// and the failed count) and its lifecycle. No queue, retry or timeout: taking
// a batch only adds it to the writer's memory, never waits on the API server,
// and never fails; the writes to the API server are the writer's controller's.
func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config, find termwriter.Finder) (exporter.Logs, error) {
	w, err := newWriter(set, cfg.(*Config), find)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, w.ConsumeLogs,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{}),
		exporterhelper.WithStart(w.Start),
		exporterhelper.WithShutdown(w.Shutdown),
	)
}
