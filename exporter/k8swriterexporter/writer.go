package k8swriterexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
)

// writer is the exporter. Aggregation and writes arrive with the learning work;
// until then it accepts records and writes nothing.
type writer struct {
	component.StartFunc
	component.ShutdownFunc

	cfg *Config
	set exporter.Settings
}

func newWriter(set exporter.Settings, cfg *Config) *writer {
	return &writer{cfg: cfg, set: set}
}

// Capabilities reports that the writer does not change the records it reads.
func (w *writer) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs takes learning events and violation observations.
func (w *writer) ConsumeLogs(context.Context, plog.Logs) error {
	return nil
}
