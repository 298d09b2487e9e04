// Package leaderexporter is the leader exporter: on a replica that reads a
// share of the data plane, it sends what the learning processor made of it to
// the leading replica's leader receiver, over OTLP/gRPC with mutual TLS.
// Learned edges and observations are merged over an interval; violation
// candidates and every other record go at once.
package leaderexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
)

// NewFactory returns the factory of the leader exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig, exporter.WithLogs(createLogs, metadata.LogsStability))
}

// createLogs builds the exporter: the aggregation in front of the collector's
// exporter helper, whose queue and retries carry each send to the leader.
func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newLeaderExporter(set, c)
	if err != nil {
		return nil, err
	}
	e.inner, err = exporterhelper.NewLogs(ctx, set, cfg, e.sender.push,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithStart(e.sender.start),
		exporterhelper.WithShutdown(e.sender.shutdown),
	)
	if err != nil {
		return nil, err
	}
	return e, nil
}
