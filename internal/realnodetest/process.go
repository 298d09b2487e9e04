package realnodetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// start runs a part of the cluster in a session of its own, with its output
// in logs/NAME.log, and records its PID in pids/NAME.pid: every part is
// stopped by that PID only, whether by this process or by the clean-up of a
// run that was killed. env is added to the environment.
func (cfg Config) start(name string, env []string, args ...string) error {
	if err := os.MkdirAll(cfg.path("logs"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.path("pids"), 0o755); err != nil {
		return err
	}
	log, err := os.Create(cfg.path("logs", name+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own session: a signal to the test run's session is not one to the
	// cluster, which is stopped in order by its clean-up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	// Reaped when it ends, so that an ended part is no zombie that still
	// looks like ours.
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(cfg.path("pids", name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

// pidOf is the recorded PID of the part name, or 0.
func (cfg Config) pidOf(name string) int {
	b, err := os.ReadFile(cfg.path("pids", name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// ours reports whether pid is still a process that this cluster started (a
// PID can be reused): its command line names the state or run folder.
func (cfg Config) ours(pid int) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false // ended since
	}
	return bytes.Contains(cmdline, []byte(cfg.State)) || bytes.Contains(cmdline, []byte(RunDir))
}

// running reports whether the part name runs.
func (cfg Config) running(name string) bool { return cfg.ours(cfg.pidOf(name)) }

// stop ends the recorded part name: SIGTERM, then SIGKILL after 10 s.
func (cfg Config) stop(name string) {
	file := cfg.path("pids", name+".pid")
	pid := cfg.pidOf(name)
	if cfg.ours(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100 && cfg.ours(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if cfg.ours(pid) {
			cfg.logf("%s (%d) ignored SIGTERM: killing it", name, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = os.Remove(file)
}

// alive returns an *ExitedError unless every part that this cluster started
// still runs.
func (cfg Config) alive() error {
	files, _ := filepath.Glob(cfg.path("pids", "*.pid"))
	var errs []error
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if !cfg.running(name) {
			errs = append(errs, &ExitedError{Part: name, Log: cfg.path("logs", name+".log")})
		}
	}
	return errors.Join(errs...)
}
