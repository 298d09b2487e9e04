package hubblereceiver

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

// hubbleReceiver holds the receiver's state. Streaming arrives with the flow-source
// work; until then it starts and stops without connecting.
type hubbleReceiver struct {
	component.StartFunc
	component.ShutdownFunc

	cfg  *Config
	set  receiver.Settings
	next consumer.Logs
}

func newHubbleReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) *hubbleReceiver {
	return &hubbleReceiver{cfg: cfg, set: set, next: next}
}
