package ztunnelreceiver

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

// ztunnelReceiver holds the receiver's state. The OTLP listener and file tailing
// arrive with the ztunnel work; until then it starts and stops without listening.
type ztunnelReceiver struct {
	component.StartFunc
	component.ShutdownFunc

	cfg  *Config
	set  receiver.Settings
	next consumer.Logs
}

func newZtunnelReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) *ztunnelReceiver {
	return &ztunnelReceiver{cfg: cfg, set: set, next: next}
}
