package metadatatest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// moduleRoot is the directory of the go.mod above dir.
func moduleRoot(t *testing.T, dir string) string {
	t.Helper()
	d, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			t.Fatalf("no go.mod above %s", dir)
		}
		d = parent
	}
}

// modulePath is the path of the module that the test belongs to: the scopes
// of its meters start with it.
func modulePath(t *testing.T) string {
	t.Helper()
	name := filepath.Join(moduleRoot(t, "."), "go.mod")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	path := modfile.ModulePath(b)
	if path == "" {
		t.Fatalf("%s names no module", name)
	}
	return path
}

// sameEverywhere checks that a metric that other components of the module
// register too (the flow receivers' shared counters, the observed-edge
// figures) is described the same in each metadata.yaml: one name, one meaning.
func sameEverywhere(t *testing.T, dir string, md *file) []string {
	t.Helper()
	root := moduleRoot(t, dir)
	self, err := filepath.Abs(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "third_party") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "metadata.yaml" || path == self {
			return nil
		}
		other, err := readFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for name, spec := range md.Telemetry.Metrics {
			o, ok := other.Telemetry.Metrics[name]
			if !ok {
				continue
			}
			if o.Description != spec.Description || o.Unit != spec.Unit || o.kind() != spec.kind() {
				out = append(out, fmt.Sprintf("metric %s: %s describes it as a %s in %s, %q; metadata.yaml as a %s in %s, %q",
					name, rel, o.kind(), o.Unit, o.Description, spec.kind(), spec.Unit, spec.Description))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
