package realnodetest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// guardVar holds, in the environment of a guard process, the configuration of
// the run that it guards.
const guardVar = "NETWORK_ENFORCER_CLUSTER_GUARD"

// dismissal is what the starter writes to its guard when it has cleaned the
// host itself.
const dismissal = "stopped"

// guard is the process that cleans the host if the process that started the
// cluster dies without Stop: it reads a pipe whose only writer is the
// starter, and the kernel closes that when the starter ends, however it ends.
// It runs in a session of its own, so that a signal to the starter's session
// does not reach it, and it is the starter's own binary: a test binary or the
// realnode command, both of which link this package (see init).
type guard struct {
	cmd *exec.Cmd
	w   *os.File
}

func startGuard(cfg Config) (*guard, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	conf := cfg
	conf.LockWait = 10 * time.Minute
	b, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := os.MkdirAll(cfg.path("logs"), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(cfg.path("logs", "guard.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), guardVar+"="+string(b))
	cmd.ExtraFiles = []*os.File{r} // its fd 3
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("starting the cluster's guard: %w", err)
	}
	return &guard{cmd: cmd, w: w}, nil
}

// dismiss tells the guard that the host is clean and waits for it to end.
func (g *guard) dismiss() error {
	_, werr := g.w.WriteString(dismissal)
	cerr := g.w.Close()
	if err := g.cmd.Wait(); err != nil {
		return fmt.Errorf("the cluster's guard: %w", err)
	}
	if werr != nil {
		return werr
	}
	return cerr
}

// abandon closes the guard's pipe as the starter's death would, and waits
// for the guard to clean the host and end.
func (g *guard) abandon() error {
	_ = g.w.Close()
	if err := g.cmd.Wait(); err != nil {
		return fmt.Errorf("the cluster's guard (see its log guard.log): %w", err)
	}
	return nil
}

// init turns a process started as a guard into one, before anything else of
// its binary runs: it waits for its starter to end, and cleans the host
// unless the starter dismissed it.
func init() {
	conf, ok := os.LookupEnv(guardVar)
	if !ok {
		return
	}
	os.Exit(guardMain(conf, os.NewFile(3, "starter")))
}

func guardMain(conf string, starter io.Reader) int {
	var cfg Config
	if err := json.Unmarshal([]byte(conf), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "cluster guard: %s: %v\n", guardVar, err)
		return 2
	}
	cfg.Log = os.Stderr
	got, _ := io.ReadAll(starter) // until the starter closes it, or ends
	if string(got) == dismissal {
		return 0
	}
	cfg.logf("guard: the process that started the cluster ended without stopping it: cleaning the host")
	if err := Down(cfg); err != nil {
		cfg.logf("guard: %v", err)
		return 1
	}
	cfg.logf("guard: host clean")
	return 0
}
