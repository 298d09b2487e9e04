package enforcerextension

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share, with the fixtures' cluster
// created in it.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.Package(m, controlplanetest.Options{}, &env, func(e *controlplanetest.Env) error {
		return clustertest.Create(context.Background(), e.Client)
	}), componentcheck.LeakOptions()...)
}

// startEnforcer starts an enforcer on the test control plane with a lease of its
// own name, short enough for tests.
func startEnforcer(t *testing.T, lease string) *enforcer {
	t.Helper()
	return startEnforcerOn(t, env, lease)
}

// startEnforcerOn starts an enforcer as startEnforcer does, on control plane cp.
func startEnforcerOn(t *testing.T, cp *controlplanetest.Env, lease string) *enforcer {
	t.Helper()
	return startReplicaOn(t, cp, lease, leaderelectorextension.ReplicaName())
}

// startReplicaOn starts an enforcer as startEnforcerOn does, as the replica
// whose pod has that name: replicas of one test process differ by it.
func startReplicaOn(t *testing.T, cp *controlplanetest.Env, lease, replica string) *enforcer {
	t.Helper()
	e, _ := startLoggedReplicaOn(t, cp, lease, replica)
	return e
}

// startLoggedReplicaOn is startReplicaOn with the replica's log kept, for a
// test that waits for what it logs. The replica's leader elector starts
// first and stops last, as the collector orders them.
func startLoggedReplicaOn(t *testing.T, cp *controlplanetest.Env, lease, replica string, configure ...func(*Config)) (*enforcer, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	rc := func(k8sconfig.APIConfig) (*rest.Config, error) { return cp.Config, nil }
	elector := startElector(t, lease, replica, rc, zap.New(core))
	set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = zap.New(core)
	cfg := createDefaultConfig().(*Config)
	for _, c := range configure {
		c(cfg)
	}
	e := newEnforcer(set, cfg, rc)
	if err := e.Start(context.Background(), electorHost{leaderelectorextension.DefaultReference(): elector}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	ready(t, elector)
	return e, logs
}

// startElector starts a leader elector on a lease of that name, with
// durations short enough for tests, and shuts it down at the test's end
// (after the enforcer that a test starts on it, which is cleaned up first).
func startElector(t *testing.T, lease, replica string, rc func(k8sconfig.APIConfig) (*rest.Config, error), logger *zap.Logger) extension.Extension {
	t.Helper()
	cfg := leaderelectorextension.NewFactory().CreateDefaultConfig().(*leaderelectorextension.Config)
	cfg.LeaseName, cfg.LeaseNamespace = lease, "default"
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	set := extension.Settings{ID: leaderelectorextension.DefaultReference(), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = logger
	l := leaderelectorextension.NewReplica(set, cfg, rc, replica)
	if err := l.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	return l
}

// ready begins the election, as the collector does once its pipelines are
// ready.
func ready(t *testing.T, elector extension.Extension) {
	t.Helper()
	if err := elector.(extensioncapabilities.PipelineWatcher).Ready(); err != nil {
		t.Fatal(err)
	}
}

// electorHost is a collector host with the leader elector.
type electorHost map[component.ID]component.Component

func (h electorHost) GetExtensions() map[component.ID]component.Component { return h }

// isLeader reports whether e's elector leads.
func (e *enforcer) isLeader() bool { return e.elector.IsLeader() }

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For

// stop shuts the replica down as the collector does: the enforcer, then its
// leader elector, which releases the leader Lease.
func (e *enforcer) stop() error {
	if err := e.Shutdown(context.Background()); err != nil {
		return err
	}
	return e.elector.(component.Component).Shutdown(context.Background())
}
