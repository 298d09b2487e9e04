// Package k8swriterexporter is the Kubernetes writer: it aggregates learning
// events into WorkloadNetworkPolicyProposal objects, the one writer of them,
// written by a controller on the leader only when their content changes.
package k8swriterexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
)

// NewFactory returns the factory of the Kubernetes writer exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig, exporter.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(_ context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	return newWriter(set, cfg.(*Config))
}
