// Package metadatatest checks, from a component's own test, that its
// metadata.yaml, its code and its README.md say the same: the component type,
// the stability of each signal, and the component's own metrics, read back
// from the meters that it registers on a real SDK meter provider. The
// collector's mdatagen generates the code from metadata.yaml; without it, this
// check is what keeps the three in step.
package metadatatest

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Component is what a component's test hands the check.
type Component struct {
	// Factory is the component's factory: its type and the stability of each
	// signal it supports are compared with metadata.yaml.
	Factory component.Factory
	// Type and ScopeName are its internal/metadata's.
	Type      component.Type
	ScopeName string
	// Create builds the component with set, so that it registers its meters.
	// Nil creates it through Factory, with its default configuration, for each
	// signal it supports. A component that registers its meters at Start
	// starts it here.
	Create func(t *testing.T, set component.TelemetrySettings)
	// Published are the metric names that the component's package exports
	// for others to read (its Metric constants): each must be one of its
	// metrics.
	Published []string
	// Dir holds metadata.yaml and README.md; empty is the test's directory.
	Dir string
}

// Check fails t for each difference between the component's metadata.yaml,
// its code and its README.md.
func Check(t *testing.T, c Component) {
	t.Helper()
	for _, p := range problems(t, c) {
		t.Error(p)
	}
}

// problems lists the differences, each a sentence.
func problems(t *testing.T, c Component) []string {
	t.Helper()
	dir := c.Dir
	if dir == "" {
		dir = "."
	}
	md, err := readFile(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := readReadme(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	report := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	// The type.
	if md.Type != c.Type.String() {
		report("metadata.yaml: type %q, the code's is %q", md.Type, c.Type)
	}
	if c.Factory.Type() != c.Type {
		report("the factory's type is %q, internal/metadata's %q", c.Factory.Type(), c.Type)
	}
	if want := "`" + md.Type + "`"; rd.typ != want {
		report("README.md: Type %s, want %s", orNone(rd.typ), want)
	}

	// The stability of each signal.
	class, factory := stabilities(c.Factory)
	if md.Status.Class != class {
		report("metadata.yaml: class %q, the factory is a %s's", md.Status.Class, class)
	}
	yamlLevels := map[string]string{}
	for level, signals := range md.Status.Stability {
		for _, s := range signals {
			yamlLevels[s] = level
		}
	}
	for _, s := range union(yamlLevels, factory) {
		if yamlLevels[s] != factory[s] {
			report("signal %s: metadata.yaml says %s, the factory %s", s, orNone(yamlLevels[s]), orNone(factory[s]))
		}
	}
	if want := statusRows(md); !slices.Equal(rd.stability, want) {
		report("README.md: Stability %q, want %q", rd.stability, want)
	}

	// The metrics.
	registered, async, scopes := collect(t, c)
	for _, s := range scopes {
		if s != c.ScopeName {
			report("meters registered under the scope %q: the component's scope is %q", s, c.ScopeName)
		}
	}
	for _, name := range union(md.Telemetry.Metrics, registered) {
		spec, inYAML := md.Telemetry.Metrics[name]
		got, inCode := registered[name]
		switch {
		case !inYAML:
			report("metric %s: registered, not in metadata.yaml", name)
		case !inCode:
			report("metric %s: in metadata.yaml, never registered", name)
		default:
			for _, p := range compareMetric(spec, got, async[name]) {
				report("metric %s: %s", name, p)
			}
		}
	}
	for _, name := range c.Published {
		if _, ok := md.Telemetry.Metrics[name]; !ok {
			report("the published name %s is none of the metrics of metadata.yaml", name)
		}
	}
	out = append(out, readmeMetrics(md, rd)...)
	out = append(out, sameEverywhere(t, dir, md)...)
	return out
}

// stabilities returns the factory's class and the stability of each signal
// that it supports, by signal as metadata.yaml names it.
func stabilities(f component.Factory) (string, map[string]string) {
	out := map[string]string{}
	add := func(signal string, l component.StabilityLevel) {
		if l != component.StabilityLevelUndefined {
			out[signal] = strings.ToLower(l.String())
		}
	}
	switch f := f.(type) {
	case signalFactory:
		add("traces", f.TracesStability())
		add("metrics", f.MetricsStability())
		add("logs", f.LogsStability())
		return classOf(f), out
	case connectorFactory:
		add("traces_to_traces", f.TracesToTracesStability())
		add("traces_to_metrics", f.TracesToMetricsStability())
		add("traces_to_logs", f.TracesToLogsStability())
		add("metrics_to_traces", f.MetricsToTracesStability())
		add("metrics_to_metrics", f.MetricsToMetricsStability())
		add("metrics_to_logs", f.MetricsToLogsStability())
		add("logs_to_traces", f.LogsToTracesStability())
		add("logs_to_metrics", f.LogsToMetricsStability())
		add("logs_to_logs", f.LogsToLogsStability())
		return "connector", out
	case extensionFactory:
		add("extension", f.Stability())
		return "extension", out
	}
	return "unknown", out
}

// statusRows are the Stability cells of the README's status table, as
// mdatagen writes them: a row a level, from the most stable; an extension's
// without its one signal.
func statusRows(md *file) []string {
	var out []string
	for _, level := range []string{"stable", "beta", "alpha", "development", "deprecated", "unmaintained"} {
		signals, ok := md.Status.Stability[level]
		if !ok {
			continue
		}
		if md.Status.Class == "extension" {
			out = append(out, level)
		} else {
			out = append(out, level+": "+strings.Join(signals, ", "))
		}
	}
	return out
}

// collect creates the component with a touching meter provider and returns
// the metrics of its scope, whether each is observable, and every scope that
// this module's code registered meters under.
func collect(t *testing.T, c Component) (map[string]metricdata.Metrics, map[string]bool, []string) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := newTouchingProvider(reader)
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = provider
	if c.Create != nil {
		c.Create(t, set)
	} else {
		createAll(t, c.Factory, set)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	module := modulePath(t)
	out := map[string]metricdata.Metrics{}
	var scopes []string
	for _, sm := range rm.ScopeMetrics {
		if strings.HasPrefix(sm.Scope.Name, module+"/") || sm.Scope.Name == c.ScopeName {
			scopes = append(scopes, sm.Scope.Name)
		}
		if sm.Scope.Name != c.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	provider.mu.Lock()
	defer provider.mu.Unlock()
	return out, provider.async[c.ScopeName], scopes
}

// compareMetric says how a registered metric differs from its spec.
func compareMetric(spec metricSpec, got metricdata.Metrics, async bool) []string {
	var out []string
	if !spec.Enabled {
		out = append(out, "metadata.yaml: not enabled; every metric of the components is")
	}
	if got.Description != spec.Description {
		out = append(out, fmt.Sprintf("description %q, metadata.yaml: %q", got.Description, spec.Description))
	}
	if got.Unit != spec.Unit {
		out = append(out, fmt.Sprintf("unit %q, metadata.yaml: %q", got.Unit, spec.Unit))
	}
	var kind, valueType string
	monotonic := false
	switch d := got.Data.(type) {
	case metricdata.Sum[int64]:
		kind, valueType, monotonic = "sum", "int", d.IsMonotonic
	case metricdata.Sum[float64]:
		kind, valueType, monotonic = "sum", "double", d.IsMonotonic
	case metricdata.Gauge[int64]:
		kind, valueType = "gauge", "int"
	case metricdata.Gauge[float64]:
		kind, valueType = "gauge", "double"
	default:
		kind = fmt.Sprintf("%T", got.Data)
	}
	data := spec.data()
	switch {
	case spec.Sum != nil && spec.Gauge != nil:
		out = append(out, "metadata.yaml: both sum and gauge")
	case data == nil:
		out = append(out, "metadata.yaml: neither sum nor gauge")
	case (spec.Sum != nil) != (kind == "sum") || (spec.Gauge != nil) != (kind == "gauge"):
		out = append(out, fmt.Sprintf("registered as a %s, metadata.yaml: a %s", kind, spec.kind()))
	default:
		if data.ValueType != valueType {
			out = append(out, fmt.Sprintf("value type %s, metadata.yaml: %q", valueType, data.ValueType))
		}
		if spec.Sum != nil && data.Monotonic != monotonic {
			out = append(out, fmt.Sprintf("monotonic %t, metadata.yaml: %t", monotonic, data.Monotonic))
		}
		if data.Async != async {
			out = append(out, fmt.Sprintf("observable %t, metadata.yaml: async %t", async, data.Async))
		}
	}
	return out
}

// readmeMetrics compares the README's telemetry table with metadata.yaml.
func readmeMetrics(md *file, rd *readme) []string {
	var out []string
	if len(md.Telemetry.Metrics) > 0 && rd.header == nil {
		return []string{"README.md has no table of metrics under ## Telemetry (Metric, Kind, Unit, Description)"}
	}
	if len(md.Telemetry.Metrics) > 0 {
		for _, col := range []string{colMetric, colKind, colUnit, colDescription} {
			if !slices.Contains(rd.header, col) {
				out = append(out, fmt.Sprintf("README.md: the table under ## Telemetry has no %s column (header %q)", col, rd.header))
			}
		}
	}
	for _, name := range union(md.Telemetry.Metrics, rd.metrics) {
		spec, inYAML := md.Telemetry.Metrics[name]
		row, inREADME := rd.metrics[name]
		switch {
		case !inYAML:
			out = append(out, fmt.Sprintf("README.md lists the metric %s, which metadata.yaml does not", name))
		case !inREADME:
			out = append(out, fmt.Sprintf("README.md: the metric %s is missing from the table under ## Telemetry", name))
		default:
			want := readmeMetric{kind: spec.kind(), unit: spec.Unit, description: spec.Description}
			if row != want {
				out = append(out, fmt.Sprintf("README.md: the metric %s reads %+v, metadata.yaml %+v", name, row, want))
			}
		}
	}
	return out
}

// union returns the keys of a and b, sorted.
func union[A, B any](a map[string]A, b map[string]B) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
