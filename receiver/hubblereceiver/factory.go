// Package hubblereceiver is the hubble receiver: it streams Observer.GetFlows from Cilium's Hubble Relay, or from each node's Hubble server found through Cilium's Peer service, and emits each flow as a log record of the shared flow schema.
package hubblereceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// NewFactory returns the factory of the hubble receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig, receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newHubbleReceiver(set, cfg.(*Config), next)
}
