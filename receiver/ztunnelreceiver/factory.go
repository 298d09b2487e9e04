// Package ztunnelreceiver is the ztunnel receiver: it reads Istio ambient's ztunnel
// access and policy log lines, sent over OTLP by fluent-bit or tailed from the
// node's files when this binary runs as the node agent, and emits each connection
// as a log record of the shared flow schema.
package ztunnelreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// NewFactory returns the factory of the ztunnel receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig, receiver.WithLogs(createLogs, metadata.LogsStability))
}

// createLogs builds the receiver and its inputs: the collector's OTLP receiver
// for the listeners, contrib's file consumer for the files.
func createLogs(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	c := cfg.(*Config)
	r, err := newZtunnelReceiver(set, c, next)
	if err != nil {
		return nil, err
	}
	otlp, err := newOTLPInputs(ctx, set, c, r)
	if err != nil {
		return nil, err
	}
	r.inputs = append(r.inputs, otlp...)
	if c.File.HasValue() {
		in, err := newFileInput(set, c.File.Get(), r)
		if err != nil {
			return nil, err
		}
		r.inputs = append(r.inputs, in)
	}
	return r, nil
}
