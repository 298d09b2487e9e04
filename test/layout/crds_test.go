package layout

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// crdDir is the one folder that holds the CRDs of api/: `make generate` writes
// them there, helm installs them from there, and the tests read them there.
const crdDir = "chart/crds"

// TestOneCopyOfTheCRDs: the CRDs of Network Enforcer's group are in crdDir and
// nowhere else, so that no copy can fall behind the one that the chart ships.
func TestOneCopyOfTheCRDs(t *testing.T) {
	root := repoRoot(t)
	group := []byte("group: networkenforcer.kubewarden.io")
	kind := []byte("kind: CustomResourceDefinition")
	tree, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var inDir int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(rel); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := tree.ReadFile(rel)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, kind) || !bytes.Contains(data, group) {
			return nil
		}
		if filepath.ToSlash(filepath.Dir(rel)) == crdDir {
			inDir++
			return nil
		}
		t.Errorf("%s is a CRD of networkenforcer.kubewarden.io outside %s, its one source: remove it and read %s", rel, crdDir, crdDir)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if inDir == 0 {
		t.Errorf("%s holds no CRD of networkenforcer.kubewarden.io", crdDir)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "output:crd:artifacts:config="+crdDir+"\n") {
		t.Errorf("the Makefile's generate does not write the CRDs into %s", crdDir)
	}
}
