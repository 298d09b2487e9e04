package chart

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// templateOn renders the chart as `helm install` does on the cluster of
// kubeconfig (--dry-run=server --validate): its lookups read that cluster, and
// its capabilities are that cluster's APIs.
func templateOn(t *testing.T, kubeconfig string, values map[string]any) error {
	t.Helper()
	charttest.Require(t)
	_, err := charttest.Template(context.Background(), release, namespace, values, "--dry-run=server", "--validate", "--kubeconfig", kubeconfig)
	if pastTemplates(err) {
		return nil
	}
	return err
}

// pastTemplates reports whether helm's error came after every template had
// rendered: past the templates, helm compares the objects with the cluster's,
// and the test control plane has the admission policies installed already, so
// it refuses to adopt them. A template's own failure is an "execution error".
func pastTemplates(err error) bool {
	return err != nil && strings.Contains(err.Error(), "exists and cannot be imported into the current release") &&
		!strings.Contains(err.Error(), "execution error")
}

// kubeconfigOf writes a kubeconfig of e in the test's folder.
func kubeconfigOf(t *testing.T, e *controlplanetest.Env) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInstallChecksTheCluster: on a cluster that lacks what the values need
// (the Secret that a provider's hop names, Calico's CA, cert-manager's CSI
// driver), the install fails before it makes anything, with one sentence that
// says what to install or to set; once the cluster has it, the same values
// install.
func TestInstallChecksTheCluster(t *testing.T) {
	controlplanetest.Require(t)
	kubeconfig := kubeconfigOf(t, env)
	for _, tc := range []struct {
		name    string
		values  map[string]any
		message string
		obj     client.Object
	}{
		{"cilium without Hubble Relay's client Secret", vals("controller.provider.name", "cilium"),
			"the Secret kube-system/hubble-relay-client-certs does not exist: turn on Hubble Relay's TLS in Cilium (hubble.relay.tls.server.enabled=true)",
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hubble-relay-client-certs", Namespace: "kube-system"}}},
		{"calico without Calico's CA", vals("controller.provider.name", "calico"),
			"Calico's CA Secret tigera-operator/tigera-ca-private does not exist: install Calico with its operator",
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tigera-ca-private", Namespace: "tigera-operator"}}},
		{"csi mode without the CSI driver", vals("controller.provider.istio.tls.mode", "csi"),
			"tls.mode csi needs cert-manager's CSI driver (CSIDriver csi.cert-manager.io), which this cluster does not have: install it, or use tls.mode issuer",
			&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.cert-manager.io"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := templateOn(t, kubeconfig, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("install without %s/%s: %v, want an error that says %q", tc.obj.GetNamespace(), tc.obj.GetName(), err, tc.message)
			}
			ctx := context.Background()
			if err := env.Client.Create(ctx, tc.obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, tc.obj) })
			if err := templateOn(t, kubeconfig, tc.values); err != nil {
				t.Errorf("install with %s/%s: %v", tc.obj.GetNamespace(), tc.obj.GetName(), err)
			}
		})
	}
}

// TestInstallWithoutIstio: on a cluster without Istio (no AuthorizationPolicy
// to render policies as), the Istio provider fails with a sentence that says
// to install Istio or to name the cluster's data plane; the other providers
// install there.
func TestInstallWithoutIstio(t *testing.T) {
	controlplanetest.Require(t)
	noIstio, err := controlplanetest.New(controlplanetest.Options{WithoutIstio: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = noIstio.Stop() })
	if err := installCertManagerCRDs(noIstio); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigOf(t, noIstio)
	const message = "controller.provider.name istio: this cluster serves no security.istio.io/v1 AuthorizationPolicy, which the enforcer renders policies as: install Istio in ambient mode first"
	if err := templateOn(t, kubeconfig, vals()); err == nil || !strings.Contains(err.Error(), message) {
		t.Errorf("the Istio provider without Istio: %v, want an error that says %q", err, message)
	}
	ctx := context.Background()
	if err := noIstio.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hubble-relay-client-certs", Namespace: "kube-system"}}); err != nil {
		t.Fatal(err)
	}
	if err := templateOn(t, kubeconfig, vals("controller.provider.name", "cilium")); err != nil {
		t.Errorf("the Cilium provider without Istio: %v", err)
	}
}

// TestInstallWithoutCilium: on a cluster without Cilium's CRDs, backend
// cilium fails with a sentence that says to install Cilium or to choose
// backend kubernetes, which installs there.
func TestInstallWithoutCilium(t *testing.T) {
	controlplanetest.Require(t)
	noCilium, err := controlplanetest.New(controlplanetest.Options{WithoutCilium: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = noCilium.Stop() })
	if err := installCertManagerCRDs(noCilium); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigOf(t, noCilium)
	if err := noCilium.Client.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hubble-relay-client-certs", Namespace: "kube-system"}}); err != nil {
		t.Fatal(err)
	}
	const message = "controller.provider.cilium.backend cilium: this cluster serves no cilium.io/v2 CiliumNetworkPolicy, which the enforcer renders policies as: install Cilium first"
	if err := templateOn(t, kubeconfig, vals("controller.provider.name", "cilium", "controller.provider.cilium.backend", "cilium")); err == nil || !strings.Contains(err.Error(), message) {
		t.Errorf("backend cilium without Cilium: %v, want an error that says %q", err, message)
	}
	if err := templateOn(t, kubeconfig, vals("controller.provider.name", "cilium")); err != nil {
		t.Errorf("backend kubernetes without Cilium's CRDs: %v", err)
	}
}

// TestInstallWithoutCertManager: on a cluster without cert-manager, the
// defaults (which have cert-manager issue the key pairs) fail with a sentence
// that says to install it or which values to set instead; with those values
// (a Secret of the user's own on every hop) the chart installs.
func TestInstallWithoutCertManager(t *testing.T) {
	controlplanetest.Require(t)
	bare, err := controlplanetest.New(controlplanetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })
	kubeconfig := kubeconfigOf(t, bare)
	const message = "cert-manager is not installed in this cluster (it serves no cert-manager.io/v1 Certificate): install cert-manager first, or give every TLS hop a Secret of your own (tls.mode existingSecret"
	for _, provider := range []string{"istio", "calico", "cilium"} {
		err := templateOn(t, kubeconfig, vals("controller.provider.name", provider, "controller.provider.cilium.tls.mode", "issuer",
			"controller.provider.cilium.tls.issuer.name", "hubble-clients"))
		if err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("%s defaults without cert-manager: %v, want an error that says %q", provider, err, message)
		}
	}
	own := vals("controller.provider.istio.tls.mode", "existingSecret",
		"controller.provider.istio.tls.existingSecret.name", "otlp-server",
		"controller.provider.istio.tls.existingSecret.clientName", "otlp-client",
		"telemetry.default.tls.mode", "existingSecret",
		"telemetry.default.tls.existingSecret.name", "collector-tls")
	if err := templateOn(t, kubeconfig, own); err != nil {
		t.Errorf("Secrets of one's own on every hop, without cert-manager: %v", err)
	}
}
