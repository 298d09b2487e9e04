package enforcerextension

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share, with the fixtures' cluster
// created in it.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = controlplanetest.New(controlplanetest.Options{})
	if err == nil {
		err = clustertest.Create(context.Background(), env.Client)
	}
	if err != nil {
		if env != nil {
			_ = env.Stop()
		}
		if controlplanetest.SkipPackage(err) {
			// The tests that need it skip, saying what to run; the others run.
			env = nil
			os.Exit(m.Run())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
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
	return startReplicaOn(t, cp, lease, replicaName())
}

// startReplicaOn starts an enforcer as startEnforcerOn does, as the replica
// whose pod has that name: replicas of one test process differ by it.
func startReplicaOn(t *testing.T, cp *controlplanetest.Env, lease, replica string) *enforcer {
	t.Helper()
	e, _ := startLoggedReplicaOn(t, cp, lease, replica)
	return e
}

// startLoggedReplicaOn is startReplicaOn with the replica's log kept, for a
// test that waits for what it logs.
func startLoggedReplicaOn(t *testing.T, cp *controlplanetest.Env, lease, replica string) (*enforcer, *observer.ObservedLogs) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.LeaderElection = LeaderElectionConfig{
		LeaseName: lease, LeaseNamespace: "default",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
	}
	core, logs := observer.New(zap.InfoLevel)
	set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = zap.New(core)
	e := newReplica(set, cfg, func(k8sconfig.APIConfig) (*rest.Config, error) { return cp.Config, nil }, replica)
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e, logs
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For
