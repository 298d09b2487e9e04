// Package layout checks that the package table of docs/architecture.md says
// what the tree holds: a package added, moved or removed without its row, a
// row left for a folder that is gone, or a row whose kind is wrong fails here,
// so that the table a newcomer reads stays true. It also checks that the
// libraries under internal/ import no component's package, that every
// component package runs the standard tests (internal/componentcheck) under
// goleak, and that tests wait on what a user can see rather than on time
// passing or a log line.
package layout

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// modulePath is the main module's path, which the shipped packages' import
// paths start with.
const modulePath = "github.com/kubewarden/network-enforcer"

// tableFile holds the table, under tableHeading.
const (
	tableFile    = "docs/architecture.md"
	tableHeading = "## Packages"
)

// The kinds of a row: what the folder is for.
const (
	kindShipped     = "shipped"
	kindTestSupport = "test support"
	kindTest        = "test"
	kindTool        = "tool"
	kindModule      = "module"
)

func TestPackageTableListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	table := readTable(t, root)
	packages, modules := walk(t, root)

	inTree := map[string]bool{}
	for _, dir := range append(slices.Clone(packages), modules...) {
		inTree[dir] = true
	}
	var missing, stale []string
	for dir := range inTree {
		if _, ok := table[dir]; !ok {
			missing = append(missing, dir)
		}
	}
	for dir := range table {
		if !inTree[dir] {
			stale = append(stale, dir)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	for _, dir := range missing {
		t.Errorf("%s has no row in %s's table: add `%s` with its kind and role", dir, tableFile, dir)
	}
	for _, dir := range stale {
		t.Errorf("%s's table lists %s, which holds no Go package or module: remove or rename its row", tableFile, dir)
	}
}

func TestModuleRowsAreTheFoldersWithAGoMod(t *testing.T) {
	root := repoRoot(t)
	table := readTable(t, root)
	packages, modules := walk(t, root)
	for _, dir := range modules {
		if kind, ok := table[dir]; ok && kind != kindModule {
			t.Errorf("%s has a go.mod of its own, but its row's kind is %q, not %q", dir, kind, kindModule)
		}
	}
	for _, dir := range packages {
		if kind, ok := table[dir]; ok && kind == kindModule {
			t.Errorf("%s is a package of the main module, but its row's kind is %q", dir, kindModule)
		}
	}
}

func TestShippedRowsAreWhatTheDistributionCompiles(t *testing.T) {
	root := repoRoot(t)
	table := readTable(t, root)
	shipped := shippedPackages(t, root)
	for _, dir := range slices.Sorted(maps.Keys(shipped)) {
		if kind, ok := table[dir]; ok && kind != kindShipped {
			t.Errorf("%s is compiled into the distribution (a component of builder-config.yaml imports it), but its row's kind is %q", dir, kind)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(table)) {
		if table[dir] == kindShipped && !shipped[dir] {
			t.Errorf("%s's row says %q, but no component of builder-config.yaml imports it", dir, kindShipped)
		}
	}
}

// TestHackHoldsScriptsOnly: the programs and modules have folders that say what
// they are for (see the table); hack/ keeps the shell scripts that make runs.
func TestHackHoldsScriptsOnly(t *testing.T) {
	root := repoRoot(t)
	err := filepath.WalkDir(filepath.Join(root, "hack"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, ".sh") {
			t.Errorf("%s is in hack/, which holds shell scripts only: move it where the table in %s says its kind goes", rel, tableFile)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable, so make cannot run it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// componentFolders are the folders of the collector's components. A library
// under internal/ sees a component (such as the leader elector) through a
// small interface that it defines, which the components pass in or find in
// the host, as contrib's components see an extension: it imports none.
var componentFolders = []string{"extension", "receiver", "processor", "exporter", "connector"}

// TestLibrariesImportNoComponent: no package under internal/ imports a
// component's package (a package under one of componentFolders). Test files
// are left out: a test may start the real extensions to exercise a library.
func TestLibrariesImportNoComponent(t *testing.T) {
	root := repoRoot(t)
	packages, _ := walk(t, root)
	fset := token.NewFileSet()
	for _, dir := range packages {
		if dir != "internal" && !strings.HasPrefix(dir, "internal/") {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			// What the go command skips: test files aside, files named with
			// a leading dot or underscore.
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				path, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					t.Fatal(err)
				}
				rel, ok := strings.CutPrefix(path, modulePath+"/")
				if !ok {
					continue
				}
				for _, folder := range componentFolders {
					if strings.HasPrefix(rel, folder+"/") {
						t.Errorf("%s/%s imports %s, a component's package: define the small interface the library needs in %s, and have the components pass the component in",
							dir, name, path, dir)
					}
				}
			}
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// rowPattern matches a row: | `path` | kind | role |.
var rowPattern = regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+?) \\| (.+) \\|$")

// readTable reads the table of tableFile: the kind of every row under
// tableHeading, up to the next heading of that level, by path. A malformed row
// or kind fails the test.
func readTable(t *testing.T, root string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, tableFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := map[string]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == tableHeading
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		m := rowPattern.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s: a row that is not | `path` | kind | role |: %s", tableFile, line)
			continue
		}
		path, kind := m[1], m[2]
		switch kind {
		case kindShipped, kindTestSupport, kindTest, kindTool, kindModule:
		default:
			t.Errorf("%s: %s has the kind %q, which is none of the kinds the page defines", tableFile, path, kind)
		}
		if _, dup := table[path]; dup {
			t.Errorf("%s: %s has two rows", tableFile, path)
		}
		table[path] = kind
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(table) == 0 {
		t.Fatalf("%s has no table under %q", tableFile, tableHeading)
	}
	return table
}

// walk returns the folders of the main module that hold Go files (whatever
// their build tags, so test/cluster counts) and the folders below the root with
// a go.mod of their own, whose subtrees are no part of the main module. It
// skips what the go command skips: testdata and folders named with a leading
// dot or underscore (.git, .cache, ocb's _build).
func walk(t *testing.T, root string) (packages, modules []string) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				modules = append(modules, rel)
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			if dir := filepath.ToSlash(filepath.Dir(rel)); !seen[dir] {
				seen[dir] = true
				packages = append(packages, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return packages, modules
}

// importPattern matches an import path of the distribution's manifest.
var importPattern = regexp.MustCompile(`(?m)^\s*(?:-\s*)?import:\s*(\S+)`)

// mainPackage is the distribution's main: the collector's root command with
// the distribution's subcommands, and the components that ocb generates from
// builder-config.yaml.
const mainPackage = "cmd/network-enforcer"

// shippedPackages returns the folders of the main module's packages that the
// distribution compiles: the main package, the components that
// builder-config.yaml imports from this module, and everything of this module
// that they import.
func shippedPackages(t *testing.T, root string) map[string]bool {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	components := []string{modulePath + "/" + mainPackage}
	for _, m := range importPattern.FindAllStringSubmatch(string(manifest), -1) {
		if strings.HasPrefix(m[1], modulePath+"/") {
			components = append(components, m[1])
		}
	}
	if len(components) == 1 {
		t.Fatalf("builder-config.yaml imports no component of %s", modulePath)
	}
	cmd := testproc.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, components...)...)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps of the distribution's components: %v", err)
	}
	shipped := map[string]bool{}
	for _, path := range strings.Fields(string(out)) {
		if dir, ok := strings.CutPrefix(path, modulePath+"/"); ok {
			shipped[dir] = true
		}
	}
	return shipped
}
