package violationprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
)

// violationProcessor holds the processor's state. Its behaviour arrives with its own
// issue; until then it passes flows through unchanged.
type violationProcessor struct {
	cfg *Config
	set processor.Settings
}

func newViolationProcessor(set processor.Settings, cfg *Config) *violationProcessor {
	return &violationProcessor{cfg: cfg, set: set}
}

func (p *violationProcessor) processLogs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	return ld, nil
}
