package goldmanereceiver

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

// goldmaneReceiver holds the receiver's state. Streaming arrives with the flow-source
// work; until then it starts and stops without connecting.
type goldmaneReceiver struct {
	component.StartFunc
	component.ShutdownFunc

	cfg  *Config
	set  receiver.Settings
	next consumer.Logs
}

func newGoldmaneReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) *goldmaneReceiver {
	return &goldmaneReceiver{cfg: cfg, set: set, next: next}
}
