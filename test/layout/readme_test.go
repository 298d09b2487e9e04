package layout

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/render"
)

// readmeLayoutHeading is the heading of README's table of the top-level
// folders.
const readmeLayoutHeading = "## Layout"

// backticked matches a `quoted` name.
var backticked = regexp.MustCompile("`([^`]+)`")

// readmeLayout reads README's layout table: for each row, the names quoted in
// its first column, and its second column.
func readmeLayout(t *testing.T, root string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == readmeLayoutHeading
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 2 {
			t.Errorf("README.md: a layout row that is not | path | holds |: %s", line)
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			rows[strings.TrimSuffix(m[1], "/")] = cells[1]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("README.md has no layout table under %q", readmeLayoutHeading)
	}
	return rows
}

// quotes reports whether text quotes name in backticks.
func quotes(text, name string) bool {
	return strings.Contains(text, "`"+name+"`")
}

// TestREADMELayoutNamesEveryFolderAndComponent: README's layout table has a row
// for every top-level folder that holds a Go package or module, names each of
// our components that builder-config.yaml builds in, and names every page of
// docs/, every suite of test/ and every program of cmd/ and testbed/ in its
// folder's row.
func TestREADMELayoutNamesEveryFolderAndComponent(t *testing.T) {
	root := repoRoot(t)
	rows := readmeLayout(t, root)
	packages, modules := walk(t, root)

	tops := map[string]bool{}
	for _, dir := range append(slices.Clone(packages), modules...) {
		tops[strings.Split(dir, "/")[0]] = true
	}
	for _, top := range slices.Sorted(maps.Keys(tops)) {
		found := false
		for path := range rows {
			if path == top || strings.HasPrefix(path, top+"/") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("README.md's layout table has no row for %s/, which holds Go packages", top)
		}
	}

	components := ourComponents(t, root)
	var all strings.Builder
	for path, holds := range rows {
		all.WriteString("`" + path + "` " + holds + "\n")
	}
	for _, c := range components {
		if !quotes(all.String(), c) {
			t.Errorf("README.md's layout table does not name `%s`, which builder-config.yaml builds in", c)
		}
	}

	// The folders whose row names each child.
	for folder, children := range map[string][]string{
		"docs":    docPages(t, root),
		"test":    childDirs(t, root, "test"),
		"cmd":     childDirs(t, root, "cmd"),
		"testbed": childDirs(t, root, "testbed"),
	} {
		holds, ok := rows[folder]
		if !ok {
			t.Errorf("README.md's layout table has no row for %s/", folder)
			continue
		}
		for _, c := range children {
			if !quotes(holds, c) {
				t.Errorf("README.md's layout row of %s/ does not name `%s`", folder, c)
			}
		}
	}
}

// ourComponents returns the package names of the components that
// builder-config.yaml imports from this module.
func ourComponents(t *testing.T, root string) []string {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range importPattern.FindAllStringSubmatch(string(manifest), -1) {
		if strings.HasPrefix(m[1], modulePath+"/") {
			out = append(out, filepath.Base(m[1]))
		}
	}
	if len(out) == 0 {
		t.Fatalf("builder-config.yaml imports no component of %s", modulePath)
	}
	return out
}

// docPages returns the Markdown pages of docs/.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no page in docs/: %v", err)
	}
	for i, p := range pages {
		pages[i] = filepath.Base(p)
	}
	return pages
}

// childDirs returns the folders directly under dir that hold something of Go.
func childDirs(t *testing.T, root, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		goFiles, _ := filepath.Glob(filepath.Join(root, dir, e.Name(), "*.go"))
		goMod, _ := filepath.Glob(filepath.Join(root, dir, e.Name(), "go.mod"))
		if len(goFiles)+len(goMod) > 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// The enforcer extension's folder and what README lists the cache's kinds in.
const (
	enforcerDir    = "extension/enforcerextension"
	enforcerREADME = enforcerDir + "/README.md"
)

// informerPattern matches a client-go informer of the enforcer's compact
// stores, such as f.Apps().V1().ReplicaSets().Informer(): its kind, plural.
var informerPattern = regexp.MustCompile(`\.V1\(\)\.(\w+)\(\)\.Informer\(\)`)

// TestEnforcerREADMEListsEveryCachedKind: every kind that the enforcer's cache
// watches (the compact stores of stores.go, and the native objects that the
// controller-runtime cache keeps whole, whichever the cluster serves) is named,
// in the plural, in the enforcer extension's README.
func TestEnforcerREADMEListsEveryCachedKind(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, enforcerDir, "stores.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range informerPattern.FindAllStringSubmatch(string(src), -1) {
		kinds = append(kinds, m[1])
	}
	if len(kinds) == 0 {
		t.Fatalf("%s/stores.go has no informer that this test recognises: update informerPattern", enforcerDir)
	}
	objs := append(render.NativeTypes(render.ServedKinds{AuthorizationPolicies: true, CiliumNetworkPolicies: true}),
		render.OutsideTypes()...)
	for _, o := range objs {
		kinds = append(kinds, plural(kindOf(o)))
	}
	readme, err := os.ReadFile(filepath.Join(root, enforcerREADME))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if !strings.Contains(string(readme), k) {
			t.Errorf("%s does not name %s, which the enforcer's cache watches", enforcerREADME, k)
		}
	}
}

// kindOf is an object's kind: its GroupVersionKind's when set (unstructured),
// else its Go type's name.
func kindOf(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(o).Elem().Name()
}

// plural is a kind's plural as prose writes it.
func plural(kind string) string {
	if s, ok := strings.CutSuffix(kind, "y"); ok {
		return s + "ies"
	}
	return kind + "s"
}
