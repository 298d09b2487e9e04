package chart

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// certManager starts cert-manager's own controller (hack/certmanager.sh)
// against the suite's control plane, for the rest of t.
func certManager(t *testing.T) {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := controlplanetest.CertManagerController(root)
	if controlplanetest.IsMissing(err) {
		controlplanetest.Need(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := testproc.Command(bin, "--kubeconfig", kubeconfigOf(t, env), "--cluster-resource-namespace", namespace)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("cert-manager's controller:\n%s", logs.String())
		}
	})
}

// issuedSecret waits until the Secret of a Certificate holds a key pair whose
// certificate is not old, and returns its certificate, parsed, and its CA.
func issuedSecret(t *testing.T, name string, old []byte) (*x509.Certificate, *x509.CertPool, *corev1.Secret) {
	t.Helper()
	var s corev1.Secret
	var err error
	if !testwait.Try(t, "a new key pair in Secret "+name, 2*time.Minute, func() bool {
		s = corev1.Secret{}
		err = env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &s)
		return err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && len(s.Data["ca.crt"]) > 0 && !bytes.Equal(s.Data["tls.crt"], old)
	}) {
		t.Fatalf("cert-manager issued no new key pair into Secret %s in 2 minutes (last error: %v)", name, err)
	}
	block, _ := pem.Decode(s.Data["tls.crt"])
	if block == nil {
		t.Fatalf("Secret %s: tls.crt is no PEM", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.Data["ca.crt"]) {
		t.Fatalf("Secret %s: ca.crt holds no certificate", name)
	}
	return cert, pool, &s
}

// TestCertificatesIssuedAndRenewed applies the cert-manager objects that the
// chart's defaults render (the chart's CA and each hop's Certificate) and runs
// cert-manager's own controller: every hop's Secret gets a key pair from the
// chart's CA with the names and usage that its pod's TLS needs, and a renewal
// (as `cmctl renew` asks for one) writes a new certificate with a new key from
// the same CA.
func TestCertificatesIssuedAndRenewed(t *testing.T) {
	controlplanetest.Require(t)
	certManager(t)
	ctx := context.Background()
	r := render(t, nil)
	var certs []*unstructured.Unstructured
	for _, kind := range []string{"Issuer", "Certificate"} {
		for _, o := range r.ofKind(kind) {
			if err := env.Client.Create(ctx, o.DeepCopy()); err != nil {
				t.Fatalf("%s %s: %v", kind, o.GetName(), err)
			}
			obj := o
			t.Cleanup(func() { _ = env.Client.Delete(ctx, obj.DeepCopy()) })
			if kind == "Certificate" {
				certs = append(certs, o)
			}
		}
	}
	// The Secrets stay after their Certificates (no owner reference).
	t.Cleanup(func() {
		_ = env.Client.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(namespace), client.HasLabels{"controller.cert-manager.io/fao"})
	})
	usage := map[string]x509.ExtKeyUsage{"server auth": x509.ExtKeyUsageServerAuth, "client auth": x509.ExtKeyUsageClientAuth}
	for _, c := range certs {
		secret, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
		if c.GetName() == fullname+"-ca" {
			continue
		}
		cert, pool, _ := issuedSecret(t, secret, nil)
		usages, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "usages")
		want := usage[usages[len(usages)-1]]
		dnsNames, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames")
		opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{want}}
		if len(dnsNames) > 0 {
			opts.DNSName = dnsNames[len(dnsNames)-1]
		}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("Secret %s: the certificate does not verify against its CA for %v (%v): %v", secret, usages, dnsNames, err)
		}
	}

	// A renewal of the enforcer's server certificate, as cmctl renew asks.
	name := fullname + "-otlp-server"
	before, _, s := issuedSecret(t, name, nil)
	oldKey := s.Data["tls.key"]
	// cert-manager may still be finishing the first issuance: its Issuing
	// condition stays until the issuing controller has stored the key pair.
	// cmctl renew refuses to renew while that condition is True, and sets the
	// condition by type (never a second entry); the test does the same, on the
	// latest Certificate, again on a conflict.
	deadline := time.Now().Add(time.Minute)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		for {
			var c unstructured.Unstructured
			c.SetAPIVersion("cert-manager.io/v1")
			c.SetKind("Certificate")
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &c); err != nil {
				return err
			}
			conditions, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			var kept []any
			issuing := false
			for _, cond := range conditions {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Issuing" {
					issuing = true
					continue
				}
				kept = append(kept, cond)
			}
			if issuing {
				if time.Now().After(deadline) {
					return fmt.Errorf("Certificate %s kept its Issuing condition for a minute after its Secret was written", name)
				}
				// The poll's own interval, so that the loop does not spin while
				// it waits for the condition to go.
				time.Sleep(200 * time.Millisecond)
				continue
			}
			kept = append(kept, map[string]any{
				"type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
				"message": "renewal asked for by the test", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
			})
			if err := unstructured.SetNestedSlice(c.Object, kept, "status", "conditions"); err != nil {
				return err
			}
			return env.Client.Status().Update(ctx, &c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	after, pool, renewed := issuedSecret(t, name, s.Data["tls.crt"])
	if after.SerialNumber.Cmp(before.SerialNumber) == 0 || bytes.Equal(renewed.Data["tls.key"], oldKey) {
		t.Errorf("the renewal kept the certificate or the key (rotationPolicy Always): serial %v, key changed %v",
			after.SerialNumber, !bytes.Equal(renewed.Data["tls.key"], oldKey))
	}
	if _, err := after.Verify(x509.VerifyOptions{Roots: pool, DNSName: fmt.Sprintf("%s-otlp.%s.svc", fullname, namespace),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the renewed certificate: %v", err)
	}
}
