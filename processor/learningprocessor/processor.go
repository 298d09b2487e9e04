package learningprocessor

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
)

// learningProcessor holds the processor's state. Its behaviour arrives with its own
// issue; until then it passes flows through unchanged.
type learningProcessor struct {
	cfg *Config
	set processor.Settings
}

func newLearningProcessor(set processor.Settings, cfg *Config) *learningProcessor {
	return &learningProcessor{cfg: cfg, set: set}
}

func (p *learningProcessor) processLogs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	return ld, nil
}
