package termwriter_test

import (
	"testing"

	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// env is the control plane the package's tests share.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	// The enforcer extension reads $KUBECONFIG with auth_type kubeConfig, as
	// it does outside a cluster.
	controlplanetest.Main(m, controlplanetest.Options{}, &env, func(e *controlplanetest.Env) error {
		return e.UseKubeconfig()
	})
}

// replica is one collector's leader elector and enforcer extension, with the
// Runner of its writers' controllers.
type replica struct {
	*enforcerextensiontest.Replica
	runner termwriter.Writing
}

// startReplica starts a replica named name on the test control plane, on a
// Lease of its own; register runs the writers' controllers before the
// election begins, as a collector's writers do at their Start.
func startReplica(t *testing.T, lease, name string, register func(termwriter.Writing)) *replica {
	t.Helper()
	controlplanetest.Require(t)
	r := enforcerextensiontest.StartReplica(t, env.Config, lease, name)
	runner, err := termwriter.Find(r.Host, enforcerextension.DefaultReference(), leaderelectorextension.DefaultReference(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	register(runner)
	r.Ready(t)
	return &replica{Replica: r, runner: runner}
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For
