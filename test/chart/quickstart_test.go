package chart

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestQuickstartInstalls takes the README's quickstart installs word for word
// and renders each as `helm install` would on a cluster with cert-manager and
// the prerequisites that the README names (Calico's CA, Cilium's relay client
// Secret): each passes the chart's checks of the cluster, and none needs
// cert-manager's CSI driver.
func TestQuickstartInstalls(t *testing.T) {
	controlplanetest.Require(t)
	helm := charttest.Require(t)
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := charttest.QuickstartInstalls(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3 {
		t.Fatalf("the README's quickstart has %d helm installs, want one per provider: %v", len(cmds), cmds)
	}
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tigera-ca-private", Namespace: "tigera-operator"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hubble-relay-client-certs", Namespace: "kube-system"}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
	}
	kubeconfig := kubeconfigOf(t, env)
	providers := map[string]bool{}
	for _, words := range cmds {
		t.Run(strings.Join(words[2:], " "), func(t *testing.T) {
			// The same words, as `helm template` with the cluster: the chart
			// path is the repository's, whatever the directory.
			args := append([]string{"template"}, words[2:]...)
			for i, a := range args {
				if a == "./chart" {
					args[i] = filepath.Join(root, "chart")
				}
			}
			args = append(args, "--dry-run=server", "--validate", "--kubeconfig", kubeconfig)
			out, err := charttest.Helm(ctx, helm, args...)
			if err != nil && !pastTemplates(err) {
				t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
			}
			if err != nil {
				// Past the templates (see templateOn): render the objects
				// offline with the same words to read them, for the
				// Kubernetes that a render without a cluster assumes.
				offline := append(slices.Clone(args[:len(args)-4]), "--kube-version", charttest.KubeVersion)
				out, err = charttest.Helm(ctx, helm, offline...)
				if err != nil {
					t.Fatal(err)
				}
			}
			objs, err := charttest.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			providers[charttest.ProviderOf(words)] = true
			r := &rendered{objs: objs, index: map[string]*unstructured.Unstructured{}}
			for _, o := range objs {
				r.index[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
			}
			for _, o := range append(r.ofKind("Deployment"), r.ofKind("DaemonSet")...) {
				for name, vol := range volumes(podSpec(t, o)) {
					if vol["csi"] != nil {
						t.Errorf("%s %s: volume %s needs cert-manager's CSI driver", o.GetKind(), o.GetName(), name)
					}
				}
			}
			if len(r.ofKind("Certificate")) == 0 {
				t.Error("no Certificate: the defaults' hops have no key pair from cert-manager")
			}
		})
	}
	if len(providers) != 3 {
		t.Errorf("the quickstart installs cover %v, want istio, calico and cilium", providers)
	}
}
