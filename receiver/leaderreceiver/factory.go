// Package leaderreceiver is the leader receiver: the leading replica's
// OTLP/gRPC listener for what the other replicas' leader exporters send (the
// learning processor's output for their share of the data plane). It takes
// records only while its replica leads, and drops violation candidates that a
// reader sent again.
package leaderreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/kubewarden/network-enforcer/receiver/leaderreceiver/internal/metadata"
)

// NewFactory returns the factory of the leader receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig, receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newLeaderReceiver(ctx, set, cfg.(*Config), next)
}
