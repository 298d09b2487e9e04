package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kubewarden/network-enforcer/testbed/procstat"
)

// healthTimeout bounds the wait for a healthy collector. The extension gives up
// on its cache after two minutes; this leaves it room to say so before we do.
const healthTimeout = 5 * time.Minute

// collector runs the binary under test.
type collector struct {
	binary, kubeconfig, dir string
	opts                    options
}

// measurement is what one run of the collector found.
type measurement struct {
	// rss is the largest VmRSS sampled once the collector had settled, in bytes.
	rss int64
	// hwm is VmHWM at the end, the peak RSS since start, which includes the
	// initial list of the cluster.
	hwm int64
	// healthy is the time from start to the first healthy answer.
	healthy time.Duration
}

// measure runs the collector, with or without the enforcer extension, until it
// is healthy and has settled, samples its RSS and stops it.
func (c collector) measure(ctx context.Context, enforcer bool) (measurement, error) {
	health, err := freeAddr()
	if err != nil {
		return measurement{}, err
	}
	otlp, err := freeAddr()
	if err != nil {
		return measurement{}, err
	}
	name := "baseline"
	if enforcer {
		name = "enforcer"
	}
	config := filepath.Join(c.dir, name+".yaml")
	if err := os.WriteFile(config, []byte(collectorConfig(otlp, health, enforcer)), 0o600); err != nil {
		return measurement{}, err
	}

	out := &tail{}
	var sink io.Writer = out
	if c.opts.verbose {
		sink = io.MultiWriter(out, &prefixWriter{prefix: name + " | ", w: os.Stderr})
	}
	cmd := exec.Command(c.binary, "--config", config)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	if c.opts.godebug != "" {
		cmd.Env = append(cmd.Env, "GODEBUG="+c.opts.godebug)
	}
	cmd.Stdout, cmd.Stderr = sink, sink
	// The collector must not outlive us when we are killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return measurement{}, err
	}
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			logf("%s: no exit within 30s of SIGTERM, killing it", name)
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	failed := func(err error) (measurement, error) {
		return measurement{}, fmt.Errorf("%w\n--- last output of the collector ---\n%s", err, out)
	}

	if err := waitHealthy(ctx, health, exited); err != nil {
		if errors.Is(err, errExited) {
			err = fmt.Errorf("%w: %w", err, exitErr)
		}
		return failed(err)
	}
	m := measurement{healthy: time.Since(started)}
	logf("%s: healthy after %s; settling for %s, then sampling RSS for %s", name,
		m.healthy.Round(10*time.Millisecond), c.opts.settle, c.opts.sample)
	if err := sleep(ctx, exited, c.opts.settle); err != nil {
		return failed(err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(c.opts.sample); ; {
		mem, err := procstat.Memory(pid)
		if err != nil {
			return failed(err)
		}
		m.rss = max(m.rss, mem.Now)
		m.hwm = mem.Peak
		if !time.Now().Before(deadline) {
			break
		}
		if err := sleep(ctx, exited, time.Second); err != nil {
			return failed(err)
		}
	}
	logf("%s: RSS %.1f MiB, peak %.1f MiB", name, float64(m.rss)/mib, float64(m.hwm)/mib)
	return m, nil
}

// collectorConfig is the pipeline of both runs: an OTLP receiver that nothing
// sends to and a debug exporter, with health_check to tell when it is up. Only
// the enforcer extension (with its leader elector) differs, so that the
// difference is its cost.
func collectorConfig(otlp, health string, enforcer bool) string {
	var ext, extList string
	if enforcer {
		ext = `
  leader_elector:
    auth_type: kubeConfig
    lease_name: cachemem
    lease_namespace: default
  enforcer:
    auth_type: kubeConfig`
		extList = ", leader_elector, enforcer"
	}
	return fmt.Sprintf(`extensions:
  health_check:
    endpoint: %s%s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
exporters:
  debug:
service:
  extensions: [health_check%s]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [debug]
`, health, ext, otlp, extList)
}

var errExited = errors.New("the collector exited before it was healthy")

// waitHealthy polls health_check until it answers 200. The collector reports
// ready only once every extension has started, and the enforcer extension's
// Start returns only after its cache has synced.
func waitHealthy(ctx context.Context, addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", http.NoBody)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := sleep(ctx, exited, 100*time.Millisecond); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("not healthy within %s", healthTimeout)
			}
			return err
		}
	}
}

// sleep waits for d, failing early when ctx ends or the collector exits.
func sleep(ctx context.Context, exited <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-exited:
		return errExited
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// tail keeps the last lines that the collector wrote, for the error message
// when it fails; a run with gctrace writes far more than is worth keeping.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 16 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > tailBytes {
		return string(t.buf[len(t.buf)-tailBytes:])
	}
	return string(t.buf)
}

// prefixWriter writes each line with a prefix, so that the output of the two
// runs and our own can be told apart.
type prefixWriter struct {
	mu      sync.Mutex
	prefix  string
	w       io.Writer
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.partial[:i]); err != nil {
			return 0, err
		}
		p.partial = p.partial[i+1:]
	}
}
