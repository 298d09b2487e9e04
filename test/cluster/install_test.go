//go:build cluster

package cluster

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// The release that the suite installs, named and placed as the README's
// quickstart does.
const (
	release   = "network-enforcer"
	namespace = "network-enforcer"
	// fullname prefixes the chart's objects: a release named after the chart
	// is not prefixed twice.
	fullname = "network-enforcer"
	// Selectors of the chart's pods.
	enforcerPods  = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=enforcer"
	collectorPods = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=collector"
	nodeAgentPods = "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=node-agent"
)

// createNamespace creates namespace unless it exists, and deletes it when the
// test ends.
func createNamespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := kubectlErr("", "get", "namespace", ns); err == nil {
		return
	}
	kubectl(t, "create", "namespace", ns)
	deleteNamespaceAfter(t, ns)
}

// suiteValues are the values that the suite runs the chart with: a short
// status sync and evidence refresh, as the tests wait for violations and
// counts that the defaults (30s, a minute) write late.
func suiteValues() []string {
	return []string{"controller.statusSyncInterval=" + syncInterval.String(), "controller.observed.interval=" + syncInterval.String()}
}

// installChart installs the chart into its namespace with the default
// collector's certificate, the suite's values, and values.
func installChart(t *testing.T, values ...string) {
	t.Helper()
	createNamespace(t, namespace)
	collectorSecrets(t)
	helmInstall(t, append(append(suiteValues(),
		"telemetry.default.tls.mode=existingSecret", "telemetry.default.tls.existingSecret.name="+collectorSecret), values...)...)
}

// helmInstall installs the chart with the real helm client, with the image
// that the node holds (pullPolicy Never: no registry) and the values given.
func helmInstall(t *testing.T, values ...string) {
	t.Helper()
	chart := filepath.Join(env.root, "chart")
	args := []string{"--kubeconfig", env.kubeconfig, "install", release, chart, "-n", namespace,
		"--set", "image.pullPolicy=Never", "--wait", "--timeout", "4m"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	start := time.Now()
	out, err := testproc.Command(env.helm, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Logf("helm install --wait took %s", time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() {
		out, err := testproc.Command(env.helm, "--kubeconfig", env.kubeconfig, "uninstall", release, "-n", namespace, "--wait").CombinedOutput()
		if err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
}

// upgrade runs helm upgrade on the release with its values and those given,
// waits for it, and says how long it took.
func upgrade(t *testing.T, values ...string) {
	t.Helper()
	args := []string{"--kubeconfig", env.kubeconfig, "upgrade", release, filepath.Join(env.root, "chart"),
		"-n", namespace, "--reuse-values", "--wait", "--timeout", "4m"}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	start := time.Now()
	if out, err := testproc.Command(env.helm, args...).CombinedOutput(); err != nil {
		t.Fatalf("helm upgrade --set %s: %v\n%s", strings.Join(values, ","), err, out)
	}
	t.Logf("helm upgrade --set %s took %s", strings.Join(values, ","), time.Since(start).Round(100*time.Millisecond))
}

// leader returns the holder of the enforcer's Lease.
func leader(t *testing.T) string {
	t.Helper()
	out, err := kubectlErr("", "-n", namespace, "get", "lease", fullname, "-o", "jsonpath={.spec.holderIdentity}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// waitLeader waits up to a minute until one of pods holds the Lease, and
// returns it.
func waitLeader(t *testing.T, pods []pod) string {
	t.Helper()
	var holder string
	waitFor(t, "an enforcer pod to hold the Lease", time.Minute, func() bool {
		holder = leader(t)
		for _, p := range pods {
			if strings.HasPrefix(holder, p.Name) {
				return true
			}
		}
		return false
	})
	return holder
}

// serviceAccount checks that the enforcer pods run as the chart's
// ServiceAccount with its projected token, and that the chart's RBAC is what
// they have: they may write NetworkPolicies, and may not read Secrets beyond
// the one of the flow source, nor impersonate.
func serviceAccount(t *testing.T) {
	t.Helper()
	sa := fullname
	out := kubectl(t, "-n", namespace, "get", "pods", "-l", enforcerPods, "-o",
		`jsonpath={range .items[*]}{.spec.serviceAccountName} {.spec.volumes[?(@.projected)].projected.sources[*].serviceAccountToken.path}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != sa+" token" {
			t.Errorf("enforcer pod's ServiceAccount and projected token: %q, want %q", line, sa+" token")
		}
	}
	user := "system:serviceaccount:" + namespace + ":" + sa
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "networkpolicies", "-n", "shop"}, "yes"},
		{[]string{"get", "secrets", "-n", "shop"}, "no"},
		{[]string{"get", "secrets", "-n", namespace}, "no"},
		{[]string{"impersonate", "serviceaccounts", "-n", "kube-system"}, "no"},
	} {
		got, _ := kubectlErr("", append([]string{"auth", "can-i", "--as", user}, c.args...)...)
		if strings.TrimSpace(got) != c.want {
			t.Errorf("kubectl auth can-i %s as the enforcer: %q, want %q", strings.Join(c.args, " "), strings.TrimSpace(got), c.want)
		}
	}
}
