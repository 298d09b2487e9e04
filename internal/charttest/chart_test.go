package charttest

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestVersionMatchesMakefile: Path looks for the binary that the Makefile
// installs, so the two versions must be one.
func TestVersionMatchesMakefile(t *testing.T) {
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HELM_VERSION\s*\?=\s*(\S+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Makefile pins no HELM_VERSION")
	}
	if string(m[1]) != Version {
		t.Fatalf("Makefile HELM_VERSION %s, charttest.Version %s", m[1], Version)
	}
}

func TestPathFromEnvironment(t *testing.T) {
	t.Setenv("HELM", filepath.Join(t.TempDir(), "no-helm"))
	if _, err := Path(); err == nil || !strings.Contains(err.Error(), "$HELM") {
		t.Fatalf("a $HELM that does not exist: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "helm")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HELM", fake)
	if p, err := Path(); err != nil || p != fake {
		t.Fatalf("Path() = %q, %v; want %q", p, err, fake)
	}
}

// TestRender renders the chart's defaults: the istio provider's objects, each
// with a kind and the release's namespace where it is namespaced.
func TestRender(t *testing.T) {
	requireHelm(t)
	objs, err := Render(context.Background(), "ne", "enforcer-ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() == "Deployment" && o.GetNamespace() != "enforcer-ns" {
			t.Errorf("Deployment %s in namespace %q", o.GetName(), o.GetNamespace())
		}
		// Numbers decode as the API machinery decodes them (int64), so that
		// unstructured's typed accessors read them.
		if o.GetKind() == "Deployment" && o.GetName() == "ne-network-enforcer" {
			if n, ok, err := unstructured.NestedInt64(o.Object, "spec", "replicas"); !ok || err != nil || n != 2 {
				t.Errorf("enforcer replicas %v (%v, %v)", o.Object["spec"].(map[string]any)["replicas"], ok, err)
			}
		}
	}
	for _, k := range []string{"Deployment", "DaemonSet", "ConfigMap", "ServiceAccount", "ClusterRole", "ValidatingAdmissionPolicy"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rendered; kinds: %v", k, kinds)
		}
	}
	if kinds["CustomResourceDefinition"] != 0 {
		t.Errorf("Render printed the CRDs too: %v", kinds)
	}
}

// TestRenderRefused: a value the chart refuses is an error that carries helm's
// own message.
func TestRenderRefused(t *testing.T) {
	requireHelm(t)
	_, err := Render(context.Background(), "ne", "ns", map[string]any{
		"controller": map[string]any{"provider": map[string]any{"name": "linkerd"}},
	})
	if err == nil {
		t.Fatal("an unknown provider rendered")
	}
	for _, want := range []string{"helm template", "/controller/provider/name", "value must be one of"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestDecode(t *testing.T) {
	objs, err := Decode("---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n")
	if err != nil || len(objs) != 1 || objs[0].GetName() != "a" {
		t.Fatalf("Decode: %v, %v", objs, err)
	}
	if _, err := Decode("metadata:\n  name: a\n"); err == nil {
		t.Fatal("an object without a kind decoded")
	}
}

// requireHelm skips, saying what to run, when the pinned helm is missing.
func requireHelm(t *testing.T) {
	t.Helper()
	Require(t)
}
