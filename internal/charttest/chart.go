// Package charttest renders the project's Helm chart (chart/) with the pinned
// helm binary, for tests and tools that need the objects a release would create.
package charttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// Version is the helm release that the Makefile installs (HELM_VERSION).
const Version = "v3.22.0"

// KubeVersion is the Kubernetes that a render without a cluster renders for:
// the oldest that the chart supports (its Chart.yaml's kubeVersion). helm built
// from source, as the Makefile builds it, assumes v1.20.0 without a cluster,
// which the chart refuses.
const KubeVersion = "v1.30.0"

// ChartDir is the chart's folder, relative to the repository root.
const ChartDir = "chart"

// Path returns the helm binary: $HELM when set, else the one that the Makefile
// installs into the project's cache, tools/helm-<Version>/helm. When the
// binary is missing it returns a *controlplanetest.MissingError, which names the
// make target that installs it.
func Path() (string, error) {
	if p := os.Getenv("HELM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", missing(fmt.Sprintf("$HELM: %v", err))
		}
		return p, nil
	}
	cache, err := controlplanetest.CacheDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(cache, "tools", "helm-"+Version, "helm")
	if _, err := os.Stat(p); err != nil {
		return "", missing(p + " is missing")
	}
	return p, nil
}

func missing(detail string) error {
	return &controlplanetest.MissingError{What: "helm " + Version, Target: "helm", Hint: "or set $HELM to a helm binary", Detail: detail}
}

// Require returns the helm binary as Path does; when it is missing, it skips t,
// or fails it under controlplanetest.RequireAllVar. Every test that renders the
// chart calls it first.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Path()
	controlplanetest.Need(t, err)
	return p
}

// Chart returns the absolute path of the chart's folder.
func Chart() (string, error) {
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ChartDir), nil
}

// Render runs `helm template` for a release of the chart in namespace with
// values (nil for the chart's defaults) and decodes every object it prints.
// The CRDs in chart/crds are not among them, as with `helm template`. A chart
// that refuses the values (its schema or a template's fail) gives an error
// that holds helm's message.
func Render(ctx context.Context, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	out, err := Template(ctx, release, namespace, values)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}

// Template runs `helm template` like Render and returns what helm prints;
// extra goes to helm after the values (--dry-run=server and --kubeconfig to
// render as `helm install` does, with the chart's lookups of the cluster and
// its version; without them, it renders for KubeVersion).
func Template(ctx context.Context, release, namespace string, values map[string]any, extra ...string) (string, error) {
	chart, err := Chart()
	if err != nil {
		return "", err
	}
	args := []string{"template", release, chart, "--namespace", namespace}
	valuesFile, cleanup, err := writeValues(values)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	if !slices.Contains(extra, "--kube-version") && !slices.Contains(extra, "--dry-run=server") {
		args = append(args, "--kube-version", KubeVersion)
	}
	return run(ctx, append(args, extra...)...)
}

// Lint runs `helm lint --strict` on the chart with values and returns what helm
// prints; a chart that does not pass gives an error with that output.
func Lint(ctx context.Context, values map[string]any) (string, error) {
	chart, err := Chart()
	if err != nil {
		return "", err
	}
	args := []string{"lint", "--strict", chart}
	valuesFile, cleanup, err := writeValues(values)
	if err != nil {
		return "", err
	}
	defer cleanup()
	if valuesFile != "" {
		args = append(args, "--values", valuesFile)
	}
	return run(ctx, args...)
}

// Decode reads every non-empty object of a multi-document YAML stream, with
// numbers as int64 or float64 as the API machinery decodes them.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	reader := yaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered chart: %w", err)
		}
		data, err := yaml.ToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("decoding the rendered chart: %w\n%s", err, doc)
		}
		if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || string(trimmed) == "null" || string(trimmed) == "{}" {
			continue // a document of comments only
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("decoding the rendered chart: %w\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
}

// writeValues writes values to a temporary file (JSON, which helm reads as
// YAML); nil values write none.
func writeValues(values map[string]any) (string, func(), error) {
	if values == nil {
		return "", func() {}, nil
	}
	data, err := json.Marshal(values)
	if err != nil {
		return "", nil, fmt.Errorf("values: %w", err)
	}
	f, err := os.CreateTemp("", "network-enforcer-values-*.yaml")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// run runs helm with args; a failure carries helm's stderr.
func run(ctx context.Context, args ...string) (string, error) {
	helm, err := Path()
	if err != nil {
		return "", err
	}
	return Helm(ctx, helm, args...)
}

// Helm runs the helm binary at path with args and returns what it prints on
// stdout; a failure carries helm's stderr.
func Helm(ctx context.Context, helm string, args ...string) (string, error) {
	cmd := testproc.CommandContext(ctx, helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if args[0] == "lint" || msg == "" {
			// lint prints its findings on stdout and only the verdict on stderr.
			msg = strings.TrimSpace(stdout.String() + "\n" + msg)
		}
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", args[0], err, msg)
	}
	return stdout.String(), nil
}
