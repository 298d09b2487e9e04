//go:build cluster

package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// quickstartInstall runs the README's "Quickstart on a cluster" install for
// provider, word for word, against the suite's cluster: the image is the one
// that the node holds under the chart's own reference, so no value is added.
// It waits until the release has pods of every component, all Ready through
// their probes, and logs how long that took from the install. When the test
// ends it uninstalls the release and checks what is left (leftovers).
func quickstartInstall(t *testing.T, provider string, pods int) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(env.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := charttest.QuickstartInstalls(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, c := range cmds {
		if charttest.ProviderOf(c) == provider {
			words = c
		}
	}
	if words == nil {
		t.Fatalf("the README's quickstart has no install for %s: %q", provider, cmds)
	}
	if words[2] != release || !slices.Contains(words, namespace) {
		t.Fatalf("the README installs %q; the suite reads the objects of release %s in namespace %s", words, release, namespace)
	}
	args := []string{"--kubeconfig", env.kubeconfig}
	for _, w := range words[1:] {
		if w == "./chart" {
			w = filepath.Join(env.root, "chart")
		}
		args = append(args, w)
	}
	// Deleted last (cleanups run last first), after the uninstall and its
	// check: helm's --create-namespace made it, and helm never deletes it.
	deleteNamespaceAfter(t, namespace)
	start := time.Now()
	if out, err := testproc.Command(env.helm, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(words, " "), err, out)
	}
	t.Cleanup(func() { uninstall(t) })
	waitReady(t, namespace, "app.kubernetes.io/instance="+release, pods, 4*time.Minute)
	t.Logf("%s: every pod Ready %s after helm install", strings.Join(words, " "), time.Since(start).Round(100*time.Millisecond))
}

// uninstall runs helm uninstall and checks that it leaves only what the chart
// README says it leaves: the CRDs, the Secrets that cert-manager wrote for the
// release's Certificates (labelled with the release), and the enforcer's own
// Lease, which the enforcer made. Nothing else of the release stays, in any
// namespace, once the garbage collector is done.
func uninstall(t *testing.T) {
	t.Helper()
	out, err := testproc.Command(env.helm, "--kubeconfig", env.kubeconfig, "uninstall", release, "-n", namespace, "--wait", "--timeout", "3m").CombinedOutput()
	if err != nil {
		t.Errorf("helm uninstall: %v\n%s", err, out)
		return
	}
	kinds := strings.Fields(kubectl(t, "api-resources", "--verbs=list", "--namespaced", "-o", "name"))
	kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "events" || k == "events.events.k8s.io" })
	var left, kept []string
	var listErr error
	deadline := time.Now().Add(90 * time.Second)
	for {
		left, kept = left[:0], kept[:0]
		// Objects of the chart (the suite installs one release), in every
		// namespace and cluster-wide, and anything in the release namespace.
		labelled, err1 := kubectlErr("", "get", strings.Join(kinds, ","), "-A", "-l", partOf,
			"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
		cluster, err2 := kubectlErr("", "get", "clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings,clusterissuers",
			"-l", partOf, "-o", "name")
		inNamespace, err3 := kubectlErr("", "get", strings.Join(kinds, ","), "-n", namespace,
			"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}{"\n"}{end}`)
		listErr = errors.Join(err1, err2, err3)
		seen := map[string]bool{}
		for _, o := range strings.Fields(labelled + "\n" + cluster + "\n" + inNamespace) {
			if seen[o] {
				continue
			}
			seen[o] = true
			if expectedLeftover(o) {
				kept = append(kept, o)
			} else {
				left = append(left, o)
			}
		}
		if listErr == nil && len(left) == 0 || time.Now().After(deadline) {
			break
		}
		// The poll's own interval, so that the loop does not spin while helm's
		// leftovers go.
		time.Sleep(2 * time.Second)
	}
	if listErr != nil {
		t.Errorf("listing what helm uninstall left: %v", listErr)
	}
	sort.Strings(left)
	if len(left) > 0 {
		t.Errorf("helm uninstall left %d objects beyond the CRDs, cert-manager's Secrets and the enforcer's Lease:\n%s", len(left), strings.Join(left, "\n"))
	}
	sort.Strings(kept)
	t.Logf("helm uninstall left the CRDs and, as the chart README says: %s", strings.Join(kept, " "))
	if out, err := kubectlErr("", "get", "crd", "workloadnetworkpolicies.networkenforcer.kubewarden.io", "workloadnetworkpolicyproposals.networkenforcer.kubewarden.io", "-o", "name"); err != nil {
		t.Errorf("the CRDs after helm uninstall: %v %s", err, out)
	}
}

// partOf selects every object that the chart renders.
const partOf = "app.kubernetes.io/part-of=network-enforcer"

// expectedLeftover reports whether the object (Kind/namespace/name) is one that
// the chart README says helm uninstall leaves, or one that every namespace has.
func expectedLeftover(o string) bool {
	kind, rest, _ := strings.Cut(o, "/")
	ns, name, _ := strings.Cut(rest, "/")
	switch {
	case kind == "Secret":
		// cert-manager's: the Secret of a Certificate of the release.
		out, err := kubectlErr("", "-n", ns, "get", "secret", name, "-o", `jsonpath={.metadata.annotations.cert-manager\.io/certificate-name}`)
		return err == nil && strings.HasPrefix(strings.TrimSpace(out), fullname)
	case kind == "Lease" && ns == namespace && name == fullname:
		return true
	case ns == namespace && (kind == "ServiceAccount" && name == "default" || kind == "ConfigMap" && name == "kube-root-ca.crt"):
		return true
	}
	return false
}

// secretData returns a key of a Secret, decoded.
func secretData(t *testing.T, namespace, name, key string) []byte {
	t.Helper()
	return secretKeys(t, namespace, name, key)[0]
}

// secretKeys returns keys of a Secret, decoded, from one read: a key pair
// read in two reads may straddle cert-manager's renewal of it.
func secretKeys(t *testing.T, namespace, name string, keys ...string) [][]byte {
	t.Helper()
	out := kubectl(t, "-n", namespace, "get", "secret", name, "-o", "json")
	var secret struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &secret); err != nil {
		t.Fatalf("secret %s/%s: %v", namespace, name, err)
	}
	var values [][]byte
	for _, key := range keys {
		b, err := base64.StdEncoding.DecodeString(secret.Data[key])
		if err != nil {
			t.Fatalf("secret %s/%s %s: %v", namespace, name, key, err)
		}
		values = append(values, b)
	}
	return values
}

// issued waits until each Certificate is Ready in namespace and returns the
// certificate of each one's Secret.
func issued(t *testing.T, namespace string, names ...string) map[string]*x509.Certificate {
	t.Helper()
	certs := map[string]*x509.Certificate{}
	for _, name := range names {
		waitFor(t, "Certificate "+namespace+"/"+name+" Ready", 2*time.Minute, func() bool {
			out, err := kubectlErr("", "-n", namespace, "get", "certificate", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			return err == nil && strings.TrimSpace(out) == "True"
		})
		certs[name] = parseCert(t, secretData(t, namespace, name, "tls.crt"))
	}
	return certs
}

func parseCert(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("no PEM block where a certificate should be")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parsing a certificate: %v", err)
	}
	return c
}

// served returns the certificate that the TLS server at addr presents to a
// client with the key pair of clientSecret, verified against the CA of
// serverSecret for serverName: what a new connection of the hop gets.
func served(t *testing.T, addr, serverName, serverSecret, clientSecret string) (*x509.Certificate, error) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secretData(t, namespace, serverSecret, "ca.crt")) {
		t.Fatalf("secret %s has no CA", serverSecret)
	}
	kp := secretKeys(t, namespace, clientSecret, "tls.crt", "tls.key")
	pair, err := tls.X509KeyPair(kp[0], kp[1])
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: roots, ServerName: serverName, Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// mounts returns the Secrets that the pods of a workload mount, volume by volume.
func mounts(t *testing.T, kind, name string) map[string]string {
	t.Helper()
	out := kubectl(t, "-n", namespace, "get", kind, name, "-o", `jsonpath={range .spec.template.spec.volumes[*]}{.name}={.secret.secretName}{"\n"}{end}`)
	m := map[string]string{}
	for _, l := range strings.Fields(out) {
		if vol, secret, _ := strings.Cut(l, "="); secret != "" {
			m[vol] = secret
		}
	}
	return m
}
