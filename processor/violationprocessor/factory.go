// Package violationprocessor is the violation processor: it turns violation candidates into violation observations, attributes each to a WorkloadNetworkPolicy, sends a policy_violation_observed log event for it at once, and, as the one owner of the violation status, merges the observations and acknowledgements into each policy's status at most once a status sync interval.
package violationprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor/internal/metadata"
)

// NewFactory returns the factory of the violation processor.
func NewFactory() processor.Factory {
	return newFactory(termwriter.Find)
}

// newFactory is NewFactory with what finds the runner of the status owner's
// controller: the test seam.
func newFactory(find termwriter.Finder) processor.Factory {
	return processor.NewFactory(metadata.Type, createDefaultConfig, processor.WithLogs(
		func(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
			return createLogs(ctx, set, cfg, next, find)
		}, metadata.LogsStability))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs, find termwriter.Finder) (processor.Logs, error) {
	p, err := newViolationProcessor(set, cfg.(*Config), next, find)
	if err != nil {
		return nil, err
	}
	// The processor reads its input and builds new events: it changes nothing
	// it is given.
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown),
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}))
}
