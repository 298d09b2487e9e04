// Package componentcheck holds the standard tests that the collector's mdatagen
// generates beside a component's metadata.yaml, for the components of this
// module, whose metadata.yaml is written by hand (mdatagen does not run here):
// the default configuration's struct is valid (componenttest.CheckConfigStruct),
// the component starts on a host without extensions and shuts down, twice over,
// for each signal that its factory supports, and shuts down without having
// started, as the collector's lifecycle contract asks; a confmap provider shuts
// down unused. It also holds the one list of goroutines that the components'
// TestMains let goleak ignore (LeakOptions), each a third-party library's that
// cannot be stopped.
//
// Every component package calls Check (or CheckProvider) from a test and runs
// its tests under goleak.VerifyTestMain with LeakOptions; test/layout fails a
// component package that does not. The check takes the factory and the
// configuration as arguments: as a library under internal/, it imports no
// component.
package componentcheck

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
)

// Component is what a component's test hands Check.
type Component struct {
	// Factory is the component's factory (a receiver's, processor's,
	// exporter's, connector's or extension's).
	Factory component.Factory
	// Config is what the component is created with; nil is the factory's
	// default configuration. A component whose default configuration cannot
	// be created (one that needs a setting that has no default) sets a
	// minimal valid configuration here, and its test says why.
	Config component.Config
	// Host is what the component starts on; nil is componenttest.NewNopHost().
	// A component that needs an extension (the enforcer, the leader elector),
	// and so fails to start without one as the collector's would, starts on
	// a host that holds the extension's fake; Check then also starts it on
	// componenttest.NewNopHost(), where Start must fail with an error, not a
	// panic, and Shutdown after that failed Start must not (the collector
	// shuts every component down whether or not it started).
	Host component.Host
}

// Check runs the standard tests of c: each is a subtest of t.
func Check(t *testing.T, c Component) {
	t.Helper()
	t.Run("ConfigStruct", func(t *testing.T) {
		if err := componenttest.CheckConfigStruct(c.Factory.CreateDefaultConfig()); err != nil {
			t.Fatal(err)
		}
	})
	cfg := c.Config
	if cfg == nil {
		cfg = c.Factory.CreateDefaultConfig()
	}
	host := c.Host
	if host == nil {
		host = componenttest.NewNopHost()
	}
	creates := creators(t, c.Factory, cfg)
	if len(creates) == 0 {
		t.Fatalf("the %s factory supports no signal", c.Factory.Type())
	}
	for _, cr := range creates {
		t.Run(cr.name+"-shutdown", func(t *testing.T) {
			comp := create(t, cr)
			if err := comp.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown without Start: %v", err)
			}
		})
		t.Run(cr.name+"-lifecycle", func(t *testing.T) {
			// Twice: what the first one held (a port, a file) is free
			// again once it has shut down, as for a collector's reload.
			for range 2 {
				comp := create(t, cr)
				err := comp.Start(context.Background(), host)
				err = errors.Join(err, comp.Shutdown(context.Background()))
				if err != nil {
					t.Fatal(err)
				}
			}
		})
		if c.Host == nil {
			continue
		}
		t.Run(cr.name+"-nophost", func(t *testing.T) {
			comp := create(t, cr)
			if err := comp.Start(context.Background(), componenttest.NewNopHost()); err == nil {
				t.Error("Start without the extension that the component needs did not fail")
			}
			if err := comp.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown after a failed Start: %v", err)
			}
		})
	}
}

// creator creates the component for one signal (one pair of signals for a
// connector).
type creator struct {
	name   string
	create func() (component.Component, error)
}

func create(t *testing.T, cr creator) component.Component {
	t.Helper()
	comp, err := cr.create()
	if err != nil {
		t.Fatalf("creating the component: %v", err)
	}
	if comp == nil {
		t.Fatal("the factory created no component and no error")
	}
	return comp
}

// creators lists what creates f's component with cfg, one for each signal
// that f supports, as the collector creates it.
func creators(t *testing.T, f component.Factory, cfg component.Config) []creator {
	t.Helper()
	ctx := context.Background()
	id := component.NewID(f.Type())
	tel := componenttest.NewNopTelemetrySettings()
	info := component.NewDefaultBuildInfo()
	undefined := component.StabilityLevelUndefined
	var out []creator
	add := func(name string, level component.StabilityLevel, create func() (component.Component, error)) {
		if level != undefined {
			out = append(out, creator{name: name, create: create})
		}
	}
	switch f := f.(type) {
	case receiver.Factory:
		set := receiver.Settings{ID: id, TelemetrySettings: tel, BuildInfo: info}
		next := consumertest.NewNop()
		add("traces", f.TracesStability(), func() (component.Component, error) { return f.CreateTraces(ctx, set, cfg, next) })
		add("metrics", f.MetricsStability(), func() (component.Component, error) { return f.CreateMetrics(ctx, set, cfg, next) })
		add("logs", f.LogsStability(), func() (component.Component, error) { return f.CreateLogs(ctx, set, cfg, next) })
	case processor.Factory:
		set := processor.Settings{ID: id, TelemetrySettings: tel, BuildInfo: info}
		next := consumertest.NewNop()
		add("traces", f.TracesStability(), func() (component.Component, error) { return f.CreateTraces(ctx, set, cfg, next) })
		add("metrics", f.MetricsStability(), func() (component.Component, error) { return f.CreateMetrics(ctx, set, cfg, next) })
		add("logs", f.LogsStability(), func() (component.Component, error) { return f.CreateLogs(ctx, set, cfg, next) })
	case exporter.Factory:
		set := exporter.Settings{ID: id, TelemetrySettings: tel, BuildInfo: info}
		add("traces", f.TracesStability(), func() (component.Component, error) { return f.CreateTraces(ctx, set, cfg) })
		add("metrics", f.MetricsStability(), func() (component.Component, error) { return f.CreateMetrics(ctx, set, cfg) })
		add("logs", f.LogsStability(), func() (component.Component, error) { return f.CreateLogs(ctx, set, cfg) })
	case connector.Factory:
		set := connector.Settings{ID: id, TelemetrySettings: tel, BuildInfo: info}
		next := consumertest.NewNop()
		add("traces_to_traces", f.TracesToTracesStability(), func() (component.Component, error) { return f.CreateTracesToTraces(ctx, set, cfg, next) })
		add("traces_to_metrics", f.TracesToMetricsStability(), func() (component.Component, error) { return f.CreateTracesToMetrics(ctx, set, cfg, next) })
		add("traces_to_logs", f.TracesToLogsStability(), func() (component.Component, error) { return f.CreateTracesToLogs(ctx, set, cfg, next) })
		add("metrics_to_traces", f.MetricsToTracesStability(), func() (component.Component, error) { return f.CreateMetricsToTraces(ctx, set, cfg, next) })
		add("metrics_to_metrics", f.MetricsToMetricsStability(), func() (component.Component, error) { return f.CreateMetricsToMetrics(ctx, set, cfg, next) })
		add("metrics_to_logs", f.MetricsToLogsStability(), func() (component.Component, error) { return f.CreateMetricsToLogs(ctx, set, cfg, next) })
		add("logs_to_traces", f.LogsToTracesStability(), func() (component.Component, error) { return f.CreateLogsToTraces(ctx, set, cfg, next) })
		add("logs_to_metrics", f.LogsToMetricsStability(), func() (component.Component, error) { return f.CreateLogsToMetrics(ctx, set, cfg, next) })
		add("logs_to_logs", f.LogsToLogsStability(), func() (component.Component, error) { return f.CreateLogsToLogs(ctx, set, cfg, next) })
	case extension.Factory:
		set := extension.Settings{ID: id, TelemetrySettings: tel, BuildInfo: info}
		add("extension", f.Stability(), func() (component.Component, error) { return f.Create(ctx, set, cfg) })
	default:
		t.Fatalf("%T is no factory of a receiver, processor, exporter, connector or extension", f)
	}
	return out
}

// CheckProvider runs the standard tests of a confmap provider's factory: the
// provider has a scheme, and shuts down unused (the collector shuts its
// providers down whether or not the configuration used them).
func CheckProvider(t *testing.T, f confmap.ProviderFactory) {
	t.Helper()
	p := f.Create(confmap.ProviderSettings{Logger: zap.NewNop()})
	if p == nil {
		t.Fatal("the factory created no provider")
	}
	if p.Scheme() == "" {
		t.Error("the provider has no scheme")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of the unused %s provider: %v", p.Scheme(), err)
	}
}
