package chart

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// repoFile reads a file of the repository.
func repoFile(t *testing.T, path string) string {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dockerfileExposed returns the ports of the Dockerfile's EXPOSE lines.
func dockerfileExposed(t *testing.T) map[int]bool {
	t.Helper()
	ports := map[int]bool{}
	for _, line := range strings.Split(repoFile(t, "Dockerfile"), "\n") {
		args, ok := strings.CutPrefix(strings.TrimSpace(line), "EXPOSE ")
		if !ok {
			continue
		}
		for _, p := range strings.Fields(args) {
			n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
			if err != nil {
				t.Fatalf("Dockerfile: EXPOSE %q is not a TCP port", p)
			}
			ports[n] = true
		}
	}
	if len(ports) == 0 {
		t.Fatal("the Dockerfile exposes no port")
	}
	return ports
}

// listeners collects the ports that a collector configuration listens on from
// outside its pod: every `endpoint` on all interfaces (0.0.0.0:<port> or
// :<port>) of a receiver, an extension or an exporter, and the pull readers
// of its own metrics on all interfaces. A loopback endpoint (the review
// page's, behind its proxy) is no port of the image.
func listeners(cfg map[string]any, where string, out map[int]string) {
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if s, ok := sub.(string); ok && k == "endpoint" {
					host, port, ok := strings.Cut(s, ":")
					if n, err := strconv.Atoi(port); ok && err == nil && (host == "0.0.0.0" || host == "") {
						out[n] = where + ": " + path + "." + k
					}
					continue
				}
				walk(sub, path+"."+k)
			}
		case []any:
			for _, sub := range v {
				walk(sub, path)
			}
		}
	}
	for _, section := range []string{"receivers", "extensions", "exporters"} {
		walk(cfg[section], section)
	}
	readers, _ := at(cfg, "service", "telemetry", "metrics", "readers").([]any)
	for _, r := range readers {
		p, _ := at(r, "pull", "exporter", "prometheus").(map[string]any)
		if p == nil || (p["host"] != "0.0.0.0" && p["host"] != "") {
			continue
		}
		switch n := p["port"].(type) {
		case float64:
			out[int(n)] = where + ": service.telemetry.metrics.readers"
		case int64:
			out[int(n)] = where + ": service.telemetry.metrics.readers"
		}
	}
}

// TestDockerfileExposesEveryListener: every port that a collector configuration
// of the chart listens on (each provider's default, the node agent and the
// default collector, and scale-out's leader receiver) is in the Dockerfile's
// EXPOSE, and EXPOSE holds no port that none of them listens on.
func TestDockerfileExposesEveryListener(t *testing.T) {
	exposed := dockerfileExposed(t)
	listened := map[int]string{}
	for name, values := range map[string]map[string]any{
		"istio":            nil,
		"calico":           vals("controller.provider.name", "calico"),
		"cilium":           vals("controller.provider.name", "cilium"),
		"cilium scale-out": scaleOutValues(),
		"istio fluent-bit": vals("nodeAgent.mode", "fluent-bit"),
	} {
		r := render(t, values)
		n := 0
		for _, cm := range r.ofKind("ConfigMap") {
			if _, ok := cm.Object["data"].(map[string]any)["config.yaml"]; !ok {
				continue
			}
			n++
			listeners(config(t, cm), name+", ConfigMap "+cm.GetName(), listened)
		}
		if n == 0 {
			t.Fatalf("%s: no collector configuration rendered", name)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(listened)) {
		if !exposed[p] {
			t.Errorf("port %d (%s) is not in the Dockerfile's EXPOSE", p, listened[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(exposed)) {
		if _, ok := listened[p]; !ok {
			t.Errorf("the Dockerfile exposes %d, which no configuration of the chart listens on", p)
		}
	}
}

// readmeKubernetes matches README's claim of the oldest Kubernetes.
var readmeKubernetes = regexp.MustCompile(`needs Kubernetes (\d+)\.(\d+) or later`)

// TestKubeVersionAgreesWithTheREADME: the chart's kubeVersion is the minimum
// that README's quickstart and the chart's README state, helm refuses a
// cluster one minor older with the chart's requirement in its message, takes
// that minimum (and a provider's pre-release-tagged build of it), and the
// test control plane satisfies it.
func TestKubeVersionAgreesWithTheREADME(t *testing.T) {
	m := readmeKubernetes.FindStringSubmatch(repoFile(t, "README.md"))
	if m == nil {
		t.Fatalf("README.md does not say %q", readmeKubernetes)
	}
	major, minor := m[1], m[2]
	if !strings.Contains(repoFile(t, "chart/README.md"), "Kubernetes "+major+"."+minor+" or later") {
		t.Errorf("chart/README.md does not say Kubernetes %s.%s or later, as README.md does", major, minor)
	}
	var meta struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal([]byte(repoFile(t, "chart/Chart.yaml")), &meta); err != nil {
		t.Fatal(err)
	}
	want := ">=" + major + "." + minor + ".0-0"
	if meta.KubeVersion != want {
		t.Fatalf("chart/Chart.yaml's kubeVersion is %q; README.md says Kubernetes %s.%s or later: %q", meta.KubeVersion, major, minor, want)
	}

	if want := "v" + major + "." + minor + ".0"; charttest.KubeVersion != want {
		t.Errorf("charttest.KubeVersion, the Kubernetes that renders without a cluster assume, is %s; the oldest supported is %s", charttest.KubeVersion, want)
	}

	charttest.Require(t)
	ctx := context.Background()
	n, _ := strconv.Atoi(minor)
	older := "v" + major + "." + strconv.Itoa(n-1) + ".9"
	_, err := charttest.Template(ctx, release, namespace, nil, "--kube-version", older)
	if err == nil || !strings.Contains(err.Error(), meta.KubeVersion) {
		t.Errorf("helm on Kubernetes %s: %v, want a refusal that names kubeVersion %s", older, err, meta.KubeVersion)
	}
	for _, ok := range []string{"v" + major + "." + minor + ".0", "v" + major + "." + minor + ".2-eks-1234567"} {
		if _, err := charttest.Template(ctx, release, namespace, nil, "--kube-version", ok); err != nil {
			t.Errorf("helm on Kubernetes %s: %v", ok, err)
		}
	}

	// The test control plane, which the install tests render against: helm
	// compares its version before it renders anything, so whatever else the
	// defaults lack on it, the version is not the refusal.
	controlplanetest.Require(t)
	if err := templateOn(t, kubeconfigOf(t, env), nil); err != nil && strings.Contains(err.Error(), "incompatible with Kubernetes") {
		t.Errorf("the test control plane does not satisfy kubeVersion %s: %v", meta.KubeVersion, err)
	}
}
