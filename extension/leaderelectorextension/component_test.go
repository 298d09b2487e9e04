package leaderelectorextension

import (
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// TestComponent runs the standard tests of a component (componentcheck).
// The default configuration reaches the API server with the pod's service
// account, which a test outside a cluster has not: the minimal valid one
// reads $KUBECONFIG, which names the test control plane.
func TestComponent(t *testing.T) {
	controlplanetest.Require(t)
	useKubeconfig(t)
	cfg := createDefaultConfig().(*Config)
	cfg.AuthType = k8sconfig.AuthTypeKubeConfig
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(), Config: cfg})
}

// useKubeconfig points $KUBECONFIG at the test control plane for t.
func useKubeconfig(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
}
