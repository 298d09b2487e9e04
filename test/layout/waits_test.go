package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sleepReason is what the comment above a test's time.Sleep must hold: a
// word that gives the reason why time must pass (a lease must expire,
// Kubernetes keeps times to the second, a poll's own interval, a benchmark's
// pacing), rather than an event that the test could wait on.
var sleepReason = regexp.MustCompile(`(?i)\b(because|why|must|so that)\b`)

// leaderLine is how the leader's log line starts (spelt in two, so that
// this file does not hold it).
const leaderLine = "Leading" + ":"

// TestsWaitOnWhatAUserCanSee: a test waits on an event that a user can see
// (an object, a condition, a metric of the component's telemetry), not on
// time passing as a stand-in for the event, nor on a line of a process's log.
// So, in every _test.go file of the repository:
//
//   - every call of time.Sleep has a comment that ends on the line directly
//     above the line of the call (above the statement, or above the for whose
//     post statement sleeps), and that comment contains one of the words
//     because, why, must, or "so that", saying why time must pass there. A
//     comment at the end of the sleep's own line does not count.
//   - no string literal starts with Leading: (the leader's log line): a test
//     that waits for a collector to lead reads network_enforcer_leader_terms
//     on its telemetry endpoint, or the Lease's holder in the API server.
//
// The Go files of cmd/demo, which waits for its enforcer to lead as the tests
// do, are held to the second rule too. Helpers in other non-test files may
// sleep in their poll loops: those are the poll's interval, not an assertion.
func TestTestsWaitOnWhatAUserCanSee(t *testing.T) {
	root := repoRoot(t)
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		isTest := strings.HasSuffix(name, "_test.go")
		if !strings.HasSuffix(name, ".go") || !isTest && !strings.HasPrefix(rel, "cmd/demo/") {
			return nil
		}
		files++
		for _, problem := range checkWaits(t, path, isTest) {
			t.Errorf("%s:%s", rel, problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no test file found under the repository's root")
	}
}

// checkWaits returns the problems of one file, each "line: what": a sleep
// without its reason (in a test file only), and a string literal that starts
// with the leader's log line.
func checkWaits(t *testing.T, path string, isTest bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	// The comments by the line they end on.
	endsOn := map[int]string{}
	for _, g := range f.Comments {
		endsOn[fset.Position(g.End()).Line] = g.Text()
	}
	timeName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	var problems []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && strings.HasPrefix(s, leaderLine) {
				problems = append(problems, strconv.Itoa(fset.Position(n.Pos()).Line)+
					": waits on the leader's log line "+strconv.Quote(s)+"; wait on network_enforcer_leader_terms or the Lease")
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || !isTest || timeName == "" || sel.Sel.Name != "Sleep" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != timeName {
				return true
			}
			line := fset.Position(n.Pos()).Line
			if !sleepReason.MatchString(endsOn[line-1]) {
				problems = append(problems, strconv.Itoa(line)+
					": time.Sleep without a comment directly above that says why time must pass (because, why, must, so that); "+
					"or wait on the event that the sleep stands for")
			}
		}
		return true
	})
	return problems
}
