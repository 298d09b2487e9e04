package enforcerextensiontest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// Replica is one collector's real leader elector and enforcer extension on
// a test control plane, for the tests of the components that run beside
// them; not a fake.
type Replica struct {
	Elector  extension.Extension
	Lease    leaderelectorextension.Lease
	Enforcer extension.Extension
	// Host holds both under their default IDs; a test adds its components.
	Host Extensions
}

// Extensions is a collector host with the extensions it holds.
type Extensions map[component.ID]component.Component

// GetExtensions returns the extensions.
func (h Extensions) GetExtensions() map[component.ID]component.Component { return h }

// Settings are an extension's settings in a test: a no-op logger, since
// client-go's process-wide logs go to the first logger routed and outlive a
// test's own.
func Settings(id component.ID) extension.Settings {
	set := extension.Settings{ID: id, TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = zap.NewNop()
	return set
}

// StartReplica starts the leader elector, as the replica whose pod is named
// name, on Lease lease with durations short enough for tests, and then the
// enforcer extension, which reads $KUBECONFIG (auth_type kubeConfig); both
// reach the control plane of rc. The election begins with Ready, once the
// test has started its components, as the collector's pipelines do. The
// test's end shuts them down in the collector's order.
func StartReplica(tb testing.TB, rc *rest.Config, lease, name string) *Replica {
	tb.Helper()
	ctx := context.Background()
	lcfg := leaderelectorextension.NewFactory().CreateDefaultConfig().(*leaderelectorextension.Config)
	lcfg.LeaseName, lcfg.LeaseNamespace = lease, "default"
	lcfg.LeaseDuration, lcfg.RenewDeadline, lcfg.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	elector := leaderelectorextension.NewReplica(Settings(leaderelectorextension.DefaultReference()), lcfg,
		func(k8sconfig.APIConfig) (*rest.Config, error) { return rc, nil }, name)
	if err := elector.Start(ctx, componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = elector.Shutdown(ctx) })
	ef := enforcerextension.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*enforcerextension.Config)
	ecfg.AuthType = k8sconfig.AuthTypeKubeConfig
	enforcer, err := ef.Create(ctx, Settings(enforcerextension.DefaultReference()), ecfg)
	if err != nil {
		tb.Fatal(err)
	}
	h := Extensions{leaderelectorextension.DefaultReference(): elector}
	if err := enforcer.Start(ctx, h); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = enforcer.Shutdown(ctx) })
	h[enforcerextension.DefaultReference()] = enforcer
	return &Replica{Elector: elector, Lease: elector.(leaderelectorextension.Lease), Enforcer: enforcer, Host: h}
}

// Ready begins the election, as the collector does once its pipelines are
// ready.
func (r *Replica) Ready(tb testing.TB) {
	tb.Helper()
	if err := r.Elector.(extensioncapabilities.PipelineWatcher).Ready(); err != nil {
		tb.Fatal(err)
	}
}

// Stop shuts the extensions down as the collector does: the enforcer, then
// the leader elector, which releases the leader Lease.
func (r *Replica) Stop(tb testing.TB) {
	tb.Helper()
	if err := r.Enforcer.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := r.Elector.Shutdown(context.Background()); err != nil {
		tb.Fatal(err)
	}
}
