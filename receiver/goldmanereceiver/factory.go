// Package goldmanereceiver is the goldmane receiver: it streams Flows.Stream from Calico's Goldmane over mutual TLS and emits each flow as a log record of the shared flow schema.
package goldmanereceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/internal/metadata"
)

// NewFactory returns the factory of the goldmane receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig, receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newGoldmaneReceiver(set, cfg.(*Config), next)
}
