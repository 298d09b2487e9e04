// Package replicas runs the built binary as the replicas of nodes mode (a
// leader and reader replicas, as the chart configures them) and reads what
// each one says of itself: its CPU time and peak resident memory from /proc,
// its counters from its Prometheus telemetry. loadtest's scale-out path and
// scaletest share it.
package replicas

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubewarden/network-enforcer/testbed/procstat"
)

// Launcher starts the processes of one run, each with its output in a log
// file of Dir.
type Launcher struct {
	// Bin is the binary; Kubeconfig the control plane's; Dir the work
	// directory for configurations and logs.
	Bin, Kubeconfig, Dir string
	// GOGC and GOMEMLIMIT are set for every process when not empty: the
	// chart's garbage collector settings.
	GOGC, GOMEMLIMIT string

	runs int
}

// Process is a running program, the binary or another, its output in a log
// file.
type Process struct {
	Name, Log, Metrics string
	Cmd                *exec.Cmd
	// Exited is closed once the process has ended.
	Exited chan struct{}
}

// WriteConfig writes a configuration file of Dir and returns its path.
func (l *Launcher) WriteConfig(name, content string) (string, error) {
	path := filepath.Join(l.Dir, name+".yaml")
	return path, os.WriteFile(path, []byte(content), 0o600)
}

// Start runs the binary with config, with further environment variables;
// its metrics are served on metrics.
func (l *Launcher) Start(name, config, metrics string, env ...string) (*Process, error) {
	cmd := exec.Command(l.Bin, "--config", config)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+l.Kubeconfig), env...)
	return l.Launch(name, metrics, cmd)
}

// StartAs runs the binary as the pod named of namespace.
func (l *Launcher) StartAs(name, namespace, config, metrics string) (*Process, error) {
	return l.Start(name, config, metrics, "POD_NAME="+name, "POD_NAMESPACE="+namespace)
}

// Launch starts cmd with the garbage collector settings, its stderr, and its
// stdout unless cmd has one, in a log file of the work directory. The process
// ends with this one.
func (l *Launcher) Launch(name, metrics string, cmd *exec.Cmd) (*Process, error) {
	l.runs++
	p := &Process{Name: name, Log: filepath.Join(l.Dir, fmt.Sprintf("%d-%s.log", l.runs, name)), Metrics: metrics, Cmd: cmd, Exited: make(chan struct{})}
	out, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// The garbage collector's settings as the chart renders them by default
	// (controller.gc), for every process, so that a CPU ratio compares the
	// work and not the collector's tuning.
	if l.GOGC != "" {
		cmd.Env = append(cmd.Env, "GOGC="+l.GOGC)
	}
	if l.GOMEMLIMIT != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+l.GOMEMLIMIT)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = out
	}
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(p.Exited)
	}()
	return p, nil
}

// Stop ends the process with SIGTERM, or SIGKILL when it does not end.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
	case <-time.After(15 * time.Second):
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	}
}

// Kill ends the process with SIGKILL, as a node that dies does, and waits
// for it.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.Exited
}

// Failed says why the process ended, with the tail of its log.
func (p *Process) Failed() error {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Errorf("%s exited; the end of %s:\n%s", p.Name, p.Log, b)
}

// CPU is the process's user and system CPU time so far.
func (p *Process) CPU() (time.Duration, error) {
	return procstat.CPU(p.Cmd.Process.Pid)
}

// PeakRSS is the process's peak resident memory so far (VmHWM).
func (p *Process) PeakRSS() (int64, error) {
	m, err := procstat.Memory(p.Cmd.Process.Pid)
	return m.Peak, err
}

// Counter sums the samples of the metrics whose names start with name.
func (p *Process) Counter(name string) (int64, error) {
	n, err := p.Samples(name, func(string) bool { return true })
	return int64(n), err
}

// Samples sums the samples of the metrics whose names start with name and
// whose line (with its labels) keep accepts.
func (p *Process) Samples(name string, keep func(line string) bool) (float64, error) {
	return Scrape("http://"+p.Metrics+"/metrics", nil, name, keep)
}

// Scrape reads a Prometheus text endpoint with client (the default one when
// nil) and sums the samples of the metrics whose names start with name and
// whose line keep accepts.
func Scrape(url string, client *http.Client, name string, keep func(line string) bool) (float64, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err
	}
	// Uncompressed: the scrapes are frequent, and compressing them would add
	// to the CPU time measured.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var n float64
	err = EachSample(resp.Body, name, func(series string, v float64) {
		if keep(series) {
			n += v
		}
	})
	return n, err
}

// Series reads the process's metrics whose names start with name, each
// series (its name and labels) with its value.
func (p *Process) Series(name string) (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+p.Metrics+"/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	err = EachSample(resp.Body, name, func(series string, v float64) { out[series] += v })
	return out, err
}

// EachSample calls f with each sample of Prometheus text r whose metric
// name starts with name: the series (name and labels) and its value.
func EachSample(r io.Reader, name string, f func(series string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			f(line[:i], v)
		}
	}
	return sc.Err()
}

// Sum adds the counters named of each process.
func Sum(ps []*Process, names ...string) (int64, error) {
	var n int64
	for _, p := range ps {
		for _, name := range names {
			v, err := p.Counter(name)
			if err != nil {
				return 0, err
			}
			n += v
		}
	}
	return n, nil
}

// Poll calls check every 50ms until it says done, the process of one of ps
// exits, or wait passes.
func Poll(ctx context.Context, what string, wait time.Duration, ps []*Process, check func() (bool, error)) error {
	deadline := time.Now().Add(wait)
	for {
		done, err := check()
		if err == nil && done {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("waited %s for %s", wait, what), err)
		}
		for _, p := range ps {
			select {
			case <-p.Exited:
				return p.Failed()
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// AtMostEvery is check, asked at most once per every: a check that lists
// what the replicas write loads the API server that they share, so it
// answers "not yet" between its lists rather than listing at Poll's pace.
func AtMostEvery(every time.Duration, check func() (bool, error)) func() (bool, error) {
	var last time.Time
	return func() (bool, error) {
		if time.Since(last) < every {
			return false, nil
		}
		last = time.Now()
		return check()
	}
}

// FreeAddr is a free port of 127.0.0.1, as host:port.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
