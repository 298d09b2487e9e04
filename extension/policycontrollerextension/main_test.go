package policycontrollerextension

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/goleak"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share, with the fixtures'
// cluster created in it.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	// The extensions read $KUBECONFIG with auth_type kubeConfig, as they do
	// outside a cluster. The garbage collector deletes a policy's revisions
	// with it.
	goleak.VerifyTestMain(controlplanetest.Package(m, controlplanetest.Options{ControllerManager: true}, &env, func(e *controlplanetest.Env) error {
		if err := e.UseKubeconfig(); err != nil {
			return err
		}
		return clustertest.Create(context.Background(), e.Client)
	}), componentcheck.LeakOptions()...)
}

// replica is one collector's extensions, started as the collector orders
// them: the leader elector, the enforcer, then the policy controller.
type replica struct {
	*enforcerextensiontest.Replica
	controller *policyController
}

// startReplica starts a replica on the test control plane, on a Lease of
// its own name, and begins the election, as the collector does once its
// pipelines are ready. The test's end shuts the extensions down in the
// collector's order.
func startReplica(t *testing.T, lease string) *replica {
	t.Helper()
	return startReplicaWith(t, lease, createDefaultConfig().(*Config))
}

// startReplicaWith is startReplica with the policy controller's cfg.
func startReplicaWith(t *testing.T, lease string, cfg *Config) *replica {
	t.Helper()
	controlplanetest.Require(t)
	r := enforcerextensiontest.StartReplica(t, env.Config, lease, leaderelectorextension.ReplicaName())
	pc := newPolicyController(enforcerextensiontest.Settings(component.NewID(metadata.Type)), cfg)
	if err := pc.Start(context.Background(), r.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown(context.Background()) })
	r.Ready(t)
	return &replica{Replica: r, controller: pc}
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For
