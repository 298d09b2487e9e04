package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane that the binaries of the package's tests talk to, with
// the fixtures' cluster and the namespace of the sample configuration's Lease;
// kubeconfig reaches it.
var (
	env        *controlplanetest.Env
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "network-enforcer-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The controller manager collects a deleted policy's native object.
	env, err = controlplanetest.New(controlplanetest.Options{ControllerManager: true})
	if err == nil {
		err = clustertest.Create(context.Background(), env.Client)
	}
	if err == nil {
		err = env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "network-enforcer"}})
	}
	if err == nil {
		kubeconfig = filepath.Join(dir, "kubeconfig")
		err = env.WriteKubeconfig(kubeconfig)
	}
	return controlplanetest.RunPackage(m, &env, err)
}
