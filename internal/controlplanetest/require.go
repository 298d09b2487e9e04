package controlplanetest

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// RequireAllVar names the environment variable under which a test whose
// prerequisite (the test control plane, the built distribution, the pinned helm)
// is missing fails instead of skipping. hack/test.sh, which `make test` runs, sets
// it, so that a run that is meant to be complete never skips silently.
const RequireAllVar = "NETWORK_ENFORCER_REQUIRE_ALL"

// RequireAll reports whether RequireAllVar is set to a value other than "" or "0".
func RequireAll() bool {
	v := os.Getenv(RequireAllVar)
	return v != "" && v != "0"
}

// MissingError is a prerequisite of a test that is not built or installed.
type MissingError struct {
	// What is missing, as "the test control plane".
	What string
	// Target is the make target that provides it.
	Target string
	// Hint is an alternative to the make target, if any ("or set $HELM").
	Hint string
	// Detail says what exactly was looked for, and where.
	Detail string
}

func (e *MissingError) Error() string {
	msg := fmt.Sprintf("needs %s: run `make %s` (or `make test`)", e.What, e.Target)
	if e.Hint != "" {
		msg += ", " + e.Hint
	}
	if e.Detail != "" {
		msg += "; " + e.Detail
	}
	return msg
}

// IsMissing reports whether err is, or wraps, a MissingError.
func IsMissing(err error) bool {
	var m *MissingError
	return errors.As(err, &m)
}

// Need ends t when err is not nil: a missing prerequisite skips t with the
// message that names the make target, or fails it under RequireAllVar; any
// other error fails t.
func Need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if IsMissing(err) && !RequireAll() {
		t.Skip(err)
	}
	if IsMissing(err) {
		t.Fatalf("%v (%s is set: a missing prerequisite fails)", err, RequireAllVar)
	}
	t.Fatal(err)
}

// Require skips t, or fails it under RequireAllVar, when the test control plane
// is not built: every test that uses a control plane, its own or its package's,
// calls it first.
func Require(t testing.TB) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	_, err = AssetsDir(root)
	Need(t, err)
}

// RequireBinary returns the built distribution, bin/network-enforcer; when it is
// not built, it skips t, or fails it under RequireAllVar.
func RequireBinary(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	Need(t, err)
	return bin
}

// SkipPackage is for a TestMain whose package shares one control plane: given the
// error of starting it, it reports whether the package's tests may run without it
// (the control plane is missing and RequireAllVar is not set), and then says so on
// standard error. Those of its tests that need the control plane call Require and
// skip; the others run.
func SkipPackage(err error) bool {
	if !IsMissing(err) {
		return false
	}
	if RequireAll() {
		fmt.Fprintf(os.Stderr, "%s is set: a missing prerequisite fails the package\n", RequireAllVar)
		return false
	}
	fmt.Fprintf(os.Stderr, "tests that use the control plane skip: %v\n", err)
	return true
}

// RunPackage runs a package's tests on *env, the control plane that its
// TestMain started, setup being what that start failed with (nil when it
// did not). A setup that failed for a missing prerequisite runs the tests
// without the control plane (*env is then nil; the tests that need it skip,
// saying what to run) unless RequireAll; any other failure fails the package.
// The control plane stops when the tests end.
func RunPackage(m *testing.M, env **Env, setup error) int {
	if setup != nil {
		if *env != nil {
			_ = (*env).Stop()
		}
		if SkipPackage(setup) {
			*env = nil
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, setup)
		return 1
	}
	code := m.Run()
	if err := (*env).Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	return code
}

// Main is the TestMain of a package whose tests share one control plane: it
// starts one with opts into *env, runs setup on it when set (the fixtures a
// package needs), runs the tests, stops it and exits. When no control plane
// can start here (SkipPackage), *env stays nil: the tests that need it skip,
// saying what to run, and the others run.
func Main(m *testing.M, opts Options, env **Env, setup func(*Env) error) {
	os.Exit(Package(m, opts, env, setup).Run())
}

// Package is what Main runs, for a TestMain that wraps the run: its Run starts
// the control plane, runs the tests and stops the control plane as Main does,
// and returns the exit code, so that goleak.VerifyTestMain(Package(...)) looks
// for goroutines left behind once the control plane has stopped.
func Package(m *testing.M, opts Options, env **Env, setup func(*Env) error) interface{ Run() int } {
	return packageRun(func() int {
		e, err := New(opts)
		if err == nil && setup != nil {
			err = setup(e)
		}
		*env = e
		return RunPackage(m, env, err)
	})
}

// packageRun is a run of a package's tests.
type packageRun func() int

func (r packageRun) Run() int { return r() }
