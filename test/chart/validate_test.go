package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// secretRef is the secret confmap provider's syntax, which the binary resolves
// against the cluster at start.
var secretRef = regexp.MustCompile(`\$\{secret:[a-z0-9.-]+/[a-z0-9.-]+/[^}]+\}`)

// validateConfigs runs the built binary's `validate` on every collector
// configuration that the release renders (the enforcer's, the default
// collector's, the node agent's): each component's keys and its own Validate
// judge it, as at the collector's start. ${secret:...} references stand for a
// PEM block here, as the provider resolves them in the cluster.
func validateConfigs(t *testing.T, r *rendered) {
	t.Helper()
	bin := binaryPath(t)
	n := 0
	for _, cm := range r.ofKind("ConfigMap") {
		text, ok := cm.Object["data"].(map[string]any)["config.yaml"].(string)
		if !ok {
			continue
		}
		n++
		text = secretRef.ReplaceAllString(text, "-----BEGIN CERTIFICATE-----")
		path := filepath.Join(t.TempDir(), cm.GetName()+".yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := testproc.Command(bin, "validate", "--config="+path).CombinedOutput()
		if err != nil {
			t.Errorf("ConfigMap %s: the collector refuses its configuration: %v\n%s\n%s", cm.GetName(), err, out, text)
		}
	}
	if n == 0 {
		t.Error("no collector configuration rendered")
	}
}

// binaryPath returns bin/network-enforcer; when it has not been built, the test
// skips (or fails under controlplanetest.RequireAllVar) with the command to run.
func binaryPath(t *testing.T) string {
	t.Helper()
	return controlplanetest.RequireBinary(t)
}

// TestValidateCatchesMistakes: the binary's check fails on a configuration
// with a key that no component has, so a pass above means something.
func TestValidateCatchesMistakes(t *testing.T) {
	bin := binaryPath(t)
	r := render(t, nil)
	cm := r.must(t, "ConfigMap", namespace, fullname+"-config")
	text := cm.Object["data"].(map[string]any)["config.yaml"].(string)
	broken := strings.Replace(text, "status_sync_interval:", "status_sync_intervall:", 1)
	if broken == text {
		t.Fatal("the enforcer's configuration has no status_sync_interval")
	}
	path := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := testproc.Command(bin, "validate", "--config="+path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "status_sync_intervall") {
		t.Fatalf("validate accepted an unknown key: %v\n%s", err, out)
	}
}

// runHelm runs helm with args and returns its combined output.
func runHelm(helm string, args ...string) (string, error) {
	out, err := testproc.Command(helm, args...).CombinedOutput()
	return string(out), err
}
