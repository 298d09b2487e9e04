package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Where the standard tests of a component come from.
const (
	componentcheckPath = modulePath + "/internal/componentcheck"
	goleakPath         = "go.uber.org/goleak"
)

// TestComponentsRunTheStandardTests: every component of builder-config.yaml
// that lives in this module (a receiver, processor, exporter, connector,
// extension or confmap provider) runs its tests under goleak, in a TestMain
// that calls goleak.VerifyTestMain (or VerifyNone) with
// componentcheck.LeakOptions, the one list of goroutines to ignore, and has a
// test that calls componentcheck.Check (CheckProvider for a provider): the
// tests that mdatagen would generate beside its metadata.yaml.
func TestComponentsRunTheStandardTests(t *testing.T) {
	root := repoRoot(t)
	dirs := componentDirs(t, root)
	if len(dirs) == 0 {
		t.Fatalf("builder-config.yaml imports no component of %s", modulePath)
	}
	for _, dir := range dirs {
		leaks, standard := standardTests(t, filepath.Join(root, dir))
		if !leaks {
			t.Errorf("%s has no TestMain that runs its tests under goleak: add one that calls goleak.VerifyTestMain(m, componentcheck.LeakOptions()...) (wrap a control plane's run with controlplanetest.Package)", dir)
		}
		if !standard {
			t.Errorf("%s has no test that calls componentcheck.Check (componentcheck.CheckProvider for a confmap provider): add one, with its factory", dir)
		}
	}
}

// componentDirs returns the folders of the components that
// builder-config.yaml imports from this module.
func componentDirs(t *testing.T, root string) []string {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(root, "builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range importPattern.FindAllStringSubmatch(string(manifest), -1) {
		if dir, ok := strings.CutPrefix(m[1], modulePath+"/"); ok {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// standardTests reports whether the test files of the package in dir have a
// TestMain that calls goleak with componentcheck.LeakOptions, and a test
// function that calls componentcheck.Check or CheckProvider.
func standardTests(t *testing.T, dir string) (leaks, standard bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		goleak, componentcheck := importName(t, f, goleakPath), importName(t, f, componentcheckPath)
		if componentcheck == "" {
			continue
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			switch {
			case fn.Name.Name == "TestMain":
				if goleak != "" && callsWith(fn.Body, goleak, []string{"VerifyTestMain", "VerifyNone"}, componentcheck, "LeakOptions") {
					leaks = true
				}
			case strings.HasPrefix(fn.Name.Name, "Test"):
				if calls(fn.Body, componentcheck, "Check", "CheckProvider") {
					standard = true
				}
			}
		}
	}
	return leaks, standard
}

// importName is the name under which f imports path, "" when it does not.
func importName(t *testing.T, f *ast.File, importPath string) string {
	t.Helper()
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if p != importPath {
			continue
		}
		if spec.Name != nil {
			return spec.Name.Name
		}
		return path.Base(p)
	}
	return ""
}

// isCall reports whether n is a call of pkg.fn for one of fns.
func isCall(n ast.Node, pkg string, fns ...string) (*ast.CallExpr, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || x.Name != pkg {
		return nil, false
	}
	for _, fn := range fns {
		if sel.Sel.Name == fn {
			return call, true
		}
	}
	return nil, false
}

// calls reports whether body calls pkg.fn for one of fns.
func calls(body ast.Node, pkg string, fns ...string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := isCall(n, pkg, fns...); ok {
			found = true
		}
		return !found
	})
	return found
}

// callsWith reports whether body calls pkg.fn, for one of fns, with a call of
// argPkg.argFn among its arguments.
func callsWith(body ast.Node, pkg string, fns []string, argPkg, argFn string) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := isCall(n, pkg, fns...); ok {
			for _, arg := range call.Args {
				if calls(arg, argPkg, argFn) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
