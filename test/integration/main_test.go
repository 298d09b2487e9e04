// Package integration runs Network Enforcer's components together, in process,
// against a real control plane (etcd, kube-apiserver, kube-controller-manager)
// and the data planes' fixture servers.
package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane of the package's tests, with the fixtures' cluster.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = controlplanetest.New(controlplanetest.Options{ControllerManager: true})
	if err == nil {
		err = clustertest.Create(context.Background(), env.Client)
	}
	dir, derr := os.MkdirTemp("", "network-enforcer-integration-")
	if err == nil && derr == nil {
		// The enforcer extension reads $KUBECONFIG with auth_type kubeConfig, as
		// it does outside a cluster.
		path := filepath.Join(dir, "kubeconfig")
		if err = env.WriteKubeconfig(path); err == nil {
			err = os.Setenv("KUBECONFIG", path)
		}
		defer os.RemoveAll(dir)
	}
	if err == nil {
		err = derr
	}
	return controlplanetest.RunPackage(m, &env, err)
}
