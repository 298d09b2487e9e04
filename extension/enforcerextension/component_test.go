package enforcerextension

import (
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// TestComponent runs the standard tests of a component (componentcheck).
// The default configuration reaches the API server with the pod's service
// account, which a test outside a cluster has not: the minimal valid one
// reads $KUBECONFIG, which names the test control plane. The extension needs
// the leader elector: it starts on a host with a real one, on the test
// control plane.
func TestComponent(t *testing.T) {
	controlplanetest.Require(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	rc := func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil }
	elector := startElector(t, "component", leaderelectorextension.ReplicaName(), rc, zap.NewNop())
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sconfig.AuthTypeKubeConfig
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(), Config: cfg,
		Host: electorHost{leaderelectorextension.DefaultReference(): elector}})
}
