// Package policydeniesconnector is the policy denies connector: it counts the
// policy_violation_observed log events into the cumulative Prometheus counter
// network_enforcer_policy_denies, one series per provider, action, transport,
// source and destination workload, destination port and policy.
package policydeniesconnector

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/kubewarden/network-enforcer/connector/policydeniesconnector/internal/metadata"
)

// NewFactory returns the factory of the policy denies connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(metadata.Type, createDefaultConfig, connector.WithLogsToMetrics(createLogsToMetrics, metadata.LogsToMetricsStability))
}

func createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	return newConnector(set, cfg.(*Config), next)
}
