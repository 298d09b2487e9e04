// Package pipelinetest starts Network Enforcer's learning path in process for
// tests and benchmarks: the enforcer extension on the API server that
// $KUBECONFIG names, the learning processor and the Kubernetes writer, and on
// request the violation processor behind them, with telemetry that the test
// reads.
package pipelinetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor"
)

// EnforcerID is the ID of the enforcer extension that Learning starts.
var EnforcerID = enforcerextension.DefaultReference()

// ElectorID is the ID of the leader elector that Learning starts.
var ElectorID = leaderelectorextension.DefaultReference()

// Enforcer is what the tests read of the running leader elector and
// enforcer extension.
type Enforcer interface {
	leaderelectorextension.Leadership
	enforcerextension.PolicyReader
}

// running is the running pair as one Enforcer.
type running struct {
	leaderelectorextension.Leadership
	enforcerextension.PolicyReader
}

// Learning is a running learning path. Flow records go to Processor.
type Learning struct {
	Tel       *componenttest.Telemetry
	Settings  component.TelemetrySettings
	Enforcer  Enforcer
	Host      component.Host
	Processor consumer.Logs

	components []component.Component // in start order
}

type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

// Options choose what StartPipeline starts besides the learning path.
type Options struct {
	// Violations, when set, receives what the violation processor sends: it
	// gets the learning processor's output as the writer does.
	Violations consumer.Logs
	// StatusSyncInterval is the violation processor's; its default when zero.
	StatusSyncInterval time.Duration
	// OutsidePeers is the learning processor's outside_peers; its default
	// (drop) when empty.
	OutsidePeers learningprocessor.OutsidePeers
	// CiliumBackend is the learning processor's cilium_backend; its default
	// (kubernetes) when empty.
	CiliumBackend v1alpha1.Backend
	// ObservedInterval is the writer's and the violation processor's
	// observed_interval; their default when zero.
	ObservedInterval time.Duration
	// StableAfter is the writer's stable_after; its default when zero.
	StableAfter time.Duration
}

// leases numbers the pipelines' Leases.
var leases atomic.Int64

// StartLearning starts the extension (leader election on a short lease in the
// default namespace), the writer and the processor; they stop when the test ends.
func StartLearning(tb testing.TB) *Learning {
	tb.Helper()
	return StartPipeline(tb, Options{})
}

// StartPipeline starts the learning path, and the violation path when opts ask.
func StartPipeline(tb testing.TB, opts Options) *Learning {
	tb.Helper()
	ctx := context.Background()
	l := &Learning{Tel: componenttest.NewTelemetry()}
	tb.Cleanup(func() { _ = l.Tel.Shutdown(ctx) })
	l.Settings = l.Tel.NewTelemetrySettings()
	l.Settings.Logger = zap.NewNop()
	build := component.NewDefaultBuildInfo()

	lf := leaderelectorextension.NewFactory()
	lcfg := lf.CreateDefaultConfig().(*leaderelectorextension.Config)
	lcfg.AuthType = k8sconfig.AuthTypeKubeConfig
	// A Lease of its own: a pipeline that stops hands its stream over to the
	// next on the same Lease, which would then not read the fixtures again.
	lcfg.LeaseNamespace, lcfg.LeaseName = "default", fmt.Sprintf("network-enforcer-test-%d", leases.Add(1))
	lcfg.LeaseDuration, lcfg.RenewDeadline, lcfg.RetryPeriod = 3*time.Second, 2*time.Second, 200*time.Millisecond
	elector, err := lf.Create(ctx, extension.Settings{ID: ElectorID, TelemetrySettings: l.Settings, BuildInfo: build}, lcfg)
	must(tb, err)
	ef := enforcerextension.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*enforcerextension.Config)
	ecfg.AuthType = k8sconfig.AuthTypeKubeConfig
	ext, err := ef.Create(ctx, extension.Settings{ID: EnforcerID, TelemetrySettings: l.Settings, BuildInfo: build}, ecfg)
	must(tb, err)
	// The policy controller promotes and renders, as a collector's does.
	cf := policycontrollerextension.NewFactory()
	controllers, err := cf.Create(ctx, extension.Settings{ID: policycontrollerextension.DefaultReference(), TelemetrySettings: l.Settings, BuildInfo: build},
		cf.CreateDefaultConfig())
	must(tb, err)
	l.Host = host{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{ElectorID: elector, EnforcerID: ext,
		policycontrollerextension.DefaultReference(): controllers}}
	l.Enforcer = running{Leadership: elector.(leaderelectorextension.Leadership), PolicyReader: ext.(enforcerextension.PolicyReader)}

	wf := k8swriterexporter.NewFactory()
	wcfg := wf.CreateDefaultConfig().(*k8swriterexporter.Config)
	if opts.ObservedInterval > 0 {
		wcfg.ObservedInterval = opts.ObservedInterval
	}
	if opts.StableAfter > 0 {
		wcfg.StableAfter = opts.StableAfter
	}
	writer, err := wf.CreateLogs(ctx, exporter.Settings{ID: component.NewID(wf.Type()), TelemetrySettings: l.Settings, BuildInfo: build},
		wcfg)
	must(tb, err)
	var next consumer.Logs = writer
	started := []component.Component{elector, ext, controllers, writer}
	if opts.Violations != nil {
		vf := violationprocessor.NewFactory()
		vcfg := vf.CreateDefaultConfig().(*violationprocessor.Config)
		if opts.StatusSyncInterval > 0 {
			vcfg.StatusSyncInterval = opts.StatusSyncInterval
		}
		if opts.ObservedInterval > 0 {
			vcfg.ObservedInterval = opts.ObservedInterval
		}
		// As the chart's events pipeline: the events to their exporter,
		// and the amendment edges to the writer.
		events, err := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
			return errors.Join(opts.Violations.ConsumeLogs(ctx, ld), writer.ConsumeLogs(ctx, ld))
		})
		must(tb, err)
		violations, err := vf.CreateLogs(ctx, processor.Settings{ID: component.NewID(vf.Type()), TelemetrySettings: l.Settings, BuildInfo: build},
			vcfg, events)
		must(tb, err)
		started = append(started, violations)
		// As the forward connector fans a pipeline out in the collector.
		next, err = consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
			return errors.Join(writer.ConsumeLogs(ctx, ld), violations.ConsumeLogs(ctx, ld))
		})
		must(tb, err)
	}
	pf := learningprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*learningprocessor.Config)
	if opts.OutsidePeers != "" {
		pcfg.OutsidePeers = opts.OutsidePeers
	}
	if opts.CiliumBackend != "" {
		pcfg.CiliumBackend = opts.CiliumBackend
	}
	proc, err := pf.CreateLogs(ctx, processor.Settings{ID: component.NewID(pf.Type()), TelemetrySettings: l.Settings, BuildInfo: build},
		pcfg, next)
	must(tb, err)
	l.Processor = proc
	for _, c := range append(started, proc) {
		l.Add(tb, c)
	}
	// As the collector, once its pipelines are ready: the election begins.
	must(tb, elector.(extensioncapabilities.PipelineWatcher).Ready())
	tb.Cleanup(func() { l.Stop(tb) })
	return l
}

// Add starts c, a component that feeds the path, and stops it with the path.
func (l *Learning) Add(tb testing.TB, c component.Component) {
	tb.Helper()
	must(tb, c.Start(context.Background(), l.Host))
	l.components = append(l.components, c)
}

// Stop shuts everything down in reverse order; a second call does nothing.
func (l *Learning) Stop(tb testing.TB) {
	for i := len(l.components) - 1; i >= 0; i-- {
		if err := l.components[i].Shutdown(context.Background()); err != nil {
			tb.Error(err)
		}
	}
	l.components = nil
}

// Counter sums a counter of the path's telemetry, over the points that have the
// attributes given.
func (l *Learning) Counter(name string, attrs map[string]string) int64 {
	m, err := l.Tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		ok := true
		for k, v := range attrs {
			got, _ := dp.Attributes.Value(attribute.Key(k))
			ok = ok && got.AsString() == v
		}
		if ok {
			n += dp.Value
		}
	}
	return n
}

// SpecWrites is how many proposals the writer created or updated (its status
// writes apart).
func (l *Learning) SpecWrites() int64 {
	return l.Counter(k8swriterexporter.MetricWrites, map[string]string{"operation": "create"}) +
		l.Counter(k8swriterexporter.MetricWrites, map[string]string{"operation": "update"})
}

// StatusWrites is how many proposal status writes the writer made.
func (l *Learning) StatusWrites() int64 {
	return l.Counter(k8swriterexporter.MetricWrites, map[string]string{"operation": "status"})
}

// Gauge returns the last value of a gauge of the path's telemetry, summed over
// its points; false when it has none yet.
func (l *Learning) Gauge(name string) (int64, bool) {
	m, err := l.Tel.GetMetric(name)
	if err != nil {
		return 0, false
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok || len(g.DataPoints) == 0 {
		return 0, false
	}
	var n int64
	for _, dp := range g.DataPoints {
		n += dp.Value
	}
	return n, true
}

// WaitWritten waits until the proposal writer has finished every write that
// what it learned asks for: a check that nothing was written then is made
// after the rounds that would have written it, not after a while.
func (l *Learning) WaitWritten(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if n, ok := l.Gauge(k8swriterexporter.MetricUnwritten); ok && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("the proposal writer did not catch up within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Settled waits until the counter has counted something and then not changed for
// quiet, and returns it. Waiting for a first count keeps a slow start (leader
// election, the first stream) from passing for a settled zero.
func (l *Learning) Settled(tb testing.TB, name string, quiet time.Duration) int64 {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for l.Counter(name, nil) == 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("%s counted nothing", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	last, since := l.Counter(name, nil), time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			tb.Fatalf("%s never settled", name)
		}
		time.Sleep(50 * time.Millisecond)
		if n := l.Counter(name, nil); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
