package realnodetest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// run runs a host command and returns what it printed on stdout; a failure is
// a *CommandError with its stderr.
func run(name string, args ...string) (string, error) {
	return runIn(nil, "", name, args...)
}

// runIn is run with extra environment and input.
func runIn(env []string, stdin string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &CommandError{Args: cmd.Args, Err: err, Output: stderr.String() + stdout.String()}
	}
	return stdout.String(), nil
}

// runAll runs each command in turn and stops at the first that fails.
func runAll(cmds ...[]string) error {
	for _, c := range cmds {
		if _, err := run(c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// quiet runs a clean-up command whose failure means there was nothing to
// clean.
func quiet(name string, args ...string) { _, _ = run(name, args...) }

// waitFor calls check every 200 ms until it succeeds, for up to d.
func (cfg Config) waitFor(what string, d time.Duration, check func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return &NotReadyError{What: what, After: d, Last: err, Logs: cfg.path("logs")}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// mounts returns the mount points of the host, as /proc/mounts lists them.
func mounts() []string {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 {
			points = append(points, strings.ReplaceAll(fields[1], `\040`, " "))
		}
	}
	return points
}

func mounted(point string) bool {
	for _, m := range mounts() {
		if m == point {
			return true
		}
	}
	return false
}

// resolvedVersion is the base name of the folder of the file that link points to:
// the version folder of a binary in the build cache.
func resolvedVersion(link string) string {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "unknown"
	}
	return filepath.Base(filepath.Dir(target))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
