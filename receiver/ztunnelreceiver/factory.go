// Package ztunnelreceiver is the ztunnel receiver: it reads Istio ambient's ztunnel
// access and policy log lines, sent over OTLP by fluent-bit or by this binary as a
// node agent, and emits each connection as a log record of the shared flow schema.
package ztunnelreceiver

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

// Type is the component type of the ztunnel receiver.
var Type = component.MustNewType("ztunnel")

// Stability is the stability level of the ztunnel receiver for logs.
const Stability = component.StabilityLevelDevelopment

// NewFactory returns the factory of the ztunnel receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(Type, createDefaultConfig, receiver.WithLogs(createLogs, Stability))
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newZtunnelReceiver(set, cfg.(*Config), next), nil
}
