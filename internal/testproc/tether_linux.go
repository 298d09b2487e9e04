package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// parentVar names the environment variable that holds the PID of the test
// process whose tethered children must die with it. Tether sets it; the
// children inherit it.
const parentVar = "NETWORK_ENFORCER_TETHER_PARENT"

// Tether returns a path to start in place of the binary at path, for a process
// that something else starts (envtest): a link named as the binary, in dir, to
// the test binary, which execs the binary at path once it has asked to be
// killed with the test process. dir must outlive the process; the control
// plane's own temporary folder does.
func Tether(dir, path string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("tethering %s: %w", path, err)
	}
	target, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	link := filepath.Join(dir, filepath.Base(path))
	if err := os.Symlink(self, link); err != nil {
		return "", fmt.Errorf("tethering %s: %w", path, err)
	}
	if err := os.Symlink(target, targetLink(link)); err != nil {
		return "", fmt.Errorf("tethering %s: %w", path, err)
	}
	if err := os.Setenv(parentVar, strconv.Itoa(os.Getpid())); err != nil {
		return "", err
	}
	return link, nil
}

// targetLink is the link beside a tether that names the binary it runs.
func targetLink(tether string) string {
	return filepath.Join(filepath.Dir(tether), "."+filepath.Base(tether)+".target")
}

// init turns a test binary started through a tether (see Tether) into the
// binary that the tether stands for, before anything of the test runs. A test
// binary started otherwise, also by a test with parentVar inherited, has no
// target beside it and runs as usual.
func init() {
	parent, ok := os.LookupEnv(parentVar)
	if !ok || len(os.Args) == 0 {
		return
	}
	target, err := os.Readlink(targetLink(os.Args[0]))
	if err != nil {
		return
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		fail(target, fmt.Errorf("PR_SET_PDEATHSIG: %w", err))
	}
	// A parent that died before the prctl sends no signal; the process has been
	// handed to another parent, and must not run on.
	if strconv.Itoa(os.Getppid()) != parent {
		fail(target, fmt.Errorf("the test process %s ended before it started", parent))
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, parentVar+"=") })
	fail(target, syscall.Exec(target, append([]string{target}, os.Args[1:]...), env))
}

// fail ends a tether that cannot become its target.
func fail(target string, err error) {
	fmt.Fprintf(os.Stderr, "testproc: starting %s: %v\n", target, err)
	os.Exit(1)
}
