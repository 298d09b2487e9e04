// Package integration runs Network Enforcer's components together, in process,
// against a real control plane (etcd, kube-apiserver, kube-controller-manager)
// and the data planes' fixture servers.
package integration

import (
	"context"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane of the package's tests, with the fixtures' cluster.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	// The enforcer extension reads $KUBECONFIG with auth_type kubeConfig, as it
	// does outside a cluster.
	controlplanetest.Main(m, controlplanetest.Options{ControllerManager: true}, &env, func(e *controlplanetest.Env) error {
		if err := clustertest.Create(context.Background(), e.Client); err != nil {
			return err
		}
		return e.UseKubeconfig()
	})
}
