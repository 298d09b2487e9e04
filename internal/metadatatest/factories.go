package metadatatest

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
)

// signalFactory is what receiver, processor and exporter factories share.
type signalFactory interface {
	component.Factory
	TracesStability() component.StabilityLevel
	MetricsStability() component.StabilityLevel
	LogsStability() component.StabilityLevel
}

type connectorFactory = connector.Factory

type extensionFactory = extension.Factory

// classOf names a signal factory's class.
func classOf(f signalFactory) string {
	switch f.(type) {
	case receiver.Factory:
		return "receiver"
	case processor.Factory:
		return "processor"
	case exporter.Factory:
		return "exporter"
	}
	return "unknown"
}

// createAll creates the component for each signal that its factory supports,
// with its default configuration, as the collector would, and shuts each
// down again (it was never started).
func createAll(t *testing.T, f component.Factory, set component.TelemetrySettings) {
	t.Helper()
	ctx := context.Background()
	id := component.NewID(f.Type())
	info := component.NewDefaultBuildInfo()
	cfg := f.CreateDefaultConfig()
	var created []component.Component
	var errs []error
	add := func(c component.Component, err error) {
		if err != nil {
			errs = append(errs, err)
		} else {
			created = append(created, c)
		}
	}
	undefined := component.StabilityLevelUndefined
	switch f := f.(type) {
	case receiver.Factory:
		set := receiver.Settings{ID: id, TelemetrySettings: set, BuildInfo: info}
		if f.TracesStability() != undefined {
			add(f.CreateTraces(ctx, set, cfg, consumertest.NewNop()))
		}
		if f.MetricsStability() != undefined {
			add(f.CreateMetrics(ctx, set, cfg, consumertest.NewNop()))
		}
		if f.LogsStability() != undefined {
			add(f.CreateLogs(ctx, set, cfg, consumertest.NewNop()))
		}
	case processor.Factory:
		set := processor.Settings{ID: id, TelemetrySettings: set, BuildInfo: info}
		if f.TracesStability() != undefined {
			add(f.CreateTraces(ctx, set, cfg, consumertest.NewNop()))
		}
		if f.MetricsStability() != undefined {
			add(f.CreateMetrics(ctx, set, cfg, consumertest.NewNop()))
		}
		if f.LogsStability() != undefined {
			add(f.CreateLogs(ctx, set, cfg, consumertest.NewNop()))
		}
	case exporter.Factory:
		set := exporter.Settings{ID: id, TelemetrySettings: set, BuildInfo: info}
		if f.TracesStability() != undefined {
			add(f.CreateTraces(ctx, set, cfg))
		}
		if f.MetricsStability() != undefined {
			add(f.CreateMetrics(ctx, set, cfg))
		}
		if f.LogsStability() != undefined {
			add(f.CreateLogs(ctx, set, cfg))
		}
	case connector.Factory:
		set := connector.Settings{ID: id, TelemetrySettings: set, BuildInfo: info}
		next := consumertest.NewNop()
		for _, c := range []struct {
			level  component.StabilityLevel
			create func() (component.Component, error)
		}{
			{f.TracesToTracesStability(), func() (component.Component, error) { return f.CreateTracesToTraces(ctx, set, cfg, next) }},
			{f.TracesToMetricsStability(), func() (component.Component, error) { return f.CreateTracesToMetrics(ctx, set, cfg, next) }},
			{f.TracesToLogsStability(), func() (component.Component, error) { return f.CreateTracesToLogs(ctx, set, cfg, next) }},
			{f.MetricsToTracesStability(), func() (component.Component, error) { return f.CreateMetricsToTraces(ctx, set, cfg, next) }},
			{f.MetricsToMetricsStability(), func() (component.Component, error) { return f.CreateMetricsToMetrics(ctx, set, cfg, next) }},
			{f.MetricsToLogsStability(), func() (component.Component, error) { return f.CreateMetricsToLogs(ctx, set, cfg, next) }},
			{f.LogsToTracesStability(), func() (component.Component, error) { return f.CreateLogsToTraces(ctx, set, cfg, next) }},
			{f.LogsToMetricsStability(), func() (component.Component, error) { return f.CreateLogsToMetrics(ctx, set, cfg, next) }},
			{f.LogsToLogsStability(), func() (component.Component, error) { return f.CreateLogsToLogs(ctx, set, cfg, next) }},
		} {
			if c.level != undefined {
				add(c.create())
			}
		}
	case extension.Factory:
		add(f.Create(ctx, extension.Settings{ID: id, TelemetrySettings: set, BuildInfo: info}, cfg))
	default:
		t.Fatalf("%T is no factory of a receiver, processor, exporter, connector or extension", f)
	}
	for _, c := range created {
		errs = append(errs, c.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("creating the %s component: %v", f.Type(), err)
	}
	if len(created) == 0 {
		t.Fatalf("the %s factory supports no signal", f.Type())
	}
}
