package leaderelectorextension

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.Package(m, controlplanetest.Options{}, &env, nil), componentcheck.LeakOptions()...)
}

// testConfig is a Lease of that name with durations short enough for tests.
func testConfig(lease string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.LeaseName, cfg.LeaseNamespace = lease, "default"
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 200*time.Millisecond
	return cfg
}

// startElector starts an elector on the test control plane, on a lease of
// its own name; the test's end shuts it down.
func startElector(t *testing.T, lease string) *elector {
	t.Helper()
	return startElectorWith(t, testConfig(lease), componenttest.NewNopTelemetrySettings())
}

func startElectorWith(t *testing.T, cfg *Config, tel component.TelemetrySettings) *elector {
	t.Helper()
	controlplanetest.Require(t)
	// Not the test's logger: the first elector routes client-go's
	// process-wide logs to its logger, and a test's logger panics when a
	// later test's elector logs through it after that test has ended.
	tel.Logger = zap.NewNop()
	set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: tel, BuildInfo: component.NewDefaultBuildInfo()}
	l := newElector(set, cfg, func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil }, ReplicaName())
	if err := l.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	// As the collector, once its pipelines are ready.
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	return l
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For
