package chart

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// TestSecretReferencesResolve: the enforcer's configuration names a flow
// source's Secret in another namespace as ${secret:...}; the built binary,
// acting as the chart's ServiceAccount with only the chart's secret-reader Role,
// resolves every reference (ca.crt, tls.crt, tls.key of that one Secret), and
// without that Role it cannot.
func TestSecretReferencesResolve(t *testing.T) {
	controlplanetest.Require(t)
	bin := binaryPath(t)
	for _, tc := range []struct {
		provider, secretNS, secretName string
	}{
		{"cilium", "kube-system", "hubble-relay-client-certs"},
		{"calico", "tigera-operator", fullname + "-goldmane-client"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			ctx := context.Background()
			r := render(t, vals("controller.provider.name", tc.provider, "telemetry.collectorStrategy", "none"))
			text, _, _ := unstructured.NestedString(r.must(t, "ConfigMap", namespace, fullname+"-config").Object, "data", "config.yaml")
			if !strings.Contains(text, "${secret:"+tc.secretNS+"/"+tc.secretName+"/") {
				t.Fatalf("the configuration reads no Secret %s/%s:\n%s", tc.secretNS, tc.secretName, text)
			}
			configPath := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(configPath, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}

			// The Secret, as the data plane (or cert-manager) writes it.
			ca := certtest.NewCA(t, tc.provider)
			pair := ca.Client(t, "network-enforcer")
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tc.secretNS, Name: tc.secretName},
				Data: map[string][]byte{"ca.crt": readFile(t, ca.CertFile), "tls.crt": readFile(t, pair.CertFile), "tls.key": readFile(t, pair.KeyFile)}}
			create(t, secret)
			// Another Secret beside it, which the Role must not open.
			create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tc.secretNS, Name: "other"}})

			// The chart's ServiceAccount and its secret-reader Role and binding.
			for _, key := range []string{"ServiceAccount/" + namespace + "/" + fullname,
				"Role/" + tc.secretNS + "/" + fullname + "-secret-reader"} {
				create(t, r.must(t, strings.Split(key, "/")[0], strings.Split(key, "/")[1], strings.Split(key, "/")[2]).DeepCopy())
			}
			binding := r.must(t, "RoleBinding", tc.secretNS, fullname+"-secret-reader").DeepCopy()
			create(t, binding)
			kubeconfig := serviceAccountKubeconfig(t, namespace, fullname)

			validate := func() (string, error) {
				cmd := testproc.Command(bin, "validate", "--config="+configPath)
				cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if out, err := validate(); err != nil {
				t.Fatalf("the binary, as the chart's ServiceAccount, cannot resolve the configuration: %v\n%s", err, out)
			}

			// The same configuration naming the other Secret: refused.
			other := strings.ReplaceAll(text, "${secret:"+tc.secretNS+"/"+tc.secretName+"/", "${secret:"+tc.secretNS+"/other/")
			if err := os.WriteFile(configPath, []byte(other), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := validate(); err == nil || !strings.Contains(out, "forbidden") {
				t.Fatalf("the chart's ServiceAccount read a Secret that its Role does not name: %v\n%s", err, out)
			}
			if err := os.WriteFile(configPath, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}

			// Without the binding, the Secret is out of reach.
			if err := env.Client.Delete(ctx, binding); err != nil {
				t.Fatal(err)
			}
			if out, err := validate(); err == nil || !strings.Contains(out, "forbidden") {
				t.Fatalf("the Secret was read without the chart's Role: %v\n%s", err, out)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// create makes obj for real and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	obj.SetResourceVersion("")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("%T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
}

// serviceAccountKubeconfig writes a kubeconfig that acts as a ServiceAccount,
// with the groups that the API server gives one.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + ns + ":" + name
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
