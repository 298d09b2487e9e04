// Package learningprocessor is the learning processor: it turns each flow into a learning event: it resolves both ends to a workload and decides the direction of the learned edge. A flow for a workload and direction that already has a WorkloadNetworkPolicy goes on as a violation candidate instead.
package learningprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

// NewFactory returns the factory of the learning processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type, createDefaultConfig, processor.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := newLearningProcessor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithStart(p.start),
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}))
}
