package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// namespace holds the enforcer's Lease.
const namespace = "network-enforcer"

// loadtest is what the paths share: the control plane with the fixture
// cluster, a CA with the certificates of every hop, and the work directory.
type loadtest struct {
	opts       options
	root, dir  string
	started    time.Time
	env        *controlplanetest.Env
	kubeconfig string
	ca         *certtest.CA
	// client is the certificate that every client presents: the enforcer's
	// receivers and the baseline clients alike.
	client certtest.Pair
	bin    string
	runs   int
	// relayRun is the hubble path's enforcer run without the field mask
	// (else with it) in relay mode, and
	// relayFlows the flow messages it read, once it ran: the scale-out
	// path's reference.
	relayRun   *side
	relayFlows int
	// unobserved runs the binary with observations off (the observe path's
	// baseline).
	unobserved bool
}

func newLoadtest(ctx context.Context, opts options) (_ *loadtest, err error) {
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin, err := controlplanetest.Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "network-enforcer-loadtest-")
	if err != nil {
		return nil, err
	}
	lt := &loadtest{opts: opts, root: root, dir: dir, started: time.Now(), bin: bin}
	defer func() {
		if err != nil {
			lt.stop()
		}
	}()
	fmt.Printf("==> starting the control plane and creating the fixture cluster\n")
	if lt.env, err = controlplanetest.New(controlplanetest.Options{}); err != nil {
		return nil, err
	}
	lt.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := lt.env.WriteKubeconfig(lt.kubeconfig); err != nil {
		return nil, err
	}
	if err := lt.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, err
	}
	if err := clustertest.Create(ctx, lt.env.Client); err != nil {
		return nil, err
	}
	certs := filepath.Join(dir, "certs")
	if err := os.Mkdir(certs, 0o700); err != nil {
		return nil, err
	}
	if lt.ca, err = certtest.NewCAIn(certs, "loadtest"); err != nil {
		return nil, err
	}
	if lt.client, err = lt.ca.IssueClient("network-enforcer"); err != nil {
		return nil, err
	}
	return lt, nil
}

func (lt *loadtest) stop() {
	if lt.env != nil {
		if err := lt.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}
	if lt.opts.keep {
		fmt.Printf("work directory kept: %s\n", lt.dir)
		return
	}
	_ = os.RemoveAll(lt.dir)
}

// serve starts a gRPC server on loopback that requires a client certificate of
// the CA; it returns its address and its stop.
func (lt *loadtest) serve(name, serverName string, register func(*grpc.Server)) (string, func(), error) {
	pair, err := lt.ca.IssueServer(name, serverName)
	if err != nil {
		return "", nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(certtest.ServerTLS(pair, lt.ca))))
	register(srv)
	go func() { _ = srv.Serve(lis) }()
	return lis.Addr().String(), srv.Stop, nil
}

// clientTLS is the baseline clients' TLS: the CA and the client certificate.
func (lt *loadtest) clientTLS(serverName string) grpc.DialOption {
	return grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: lt.ca.Pool(), Certificates: []tls.Certificate{lt.client.TLS}, ServerName: serverName, MinVersion: tls.VersionTLS12,
	}))
}

// telemetry is the service::telemetry section that exposes the collector's own
// metrics on addr, with the log quiet.
func telemetry(addr string) string {
	host, port, _ := strings.Cut(addr, ":")
	return fmt.Sprintf(`  telemetry:
    logs:
      level: warn
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %s
                port: %s`, host, port)
}

// enforcerConfig is the enforcer's configuration as the chart renders it (the
// memory limiter, learning into the writer, violations through the violation
// processor; events to nop, as the chart's collectorStrategy none), with the
// receiver given as YAML under receivers:.
func (lt *loadtest) enforcerConfig(name, receiver, metrics string) (string, error) {
	recvName, _, _ := strings.Cut(strings.TrimSpace(receiver), ":")
	return lt.writeConfig(name, fmt.Sprintf(`extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: loadtest-%[1]s
    lease_namespace: %[2]s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
%[3]s
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  learning:
    observe: %[6]t
  violation:
    status_sync_interval: 30s
    observe: %[6]t
connectors:
  forward/violations: {}
exporters:
  k8swriter: {}
  nop: {}
service:
  extensions: [leader_elector, enforcer, policy_controller]
%[4]s
  pipelines:
    logs/flows:
      receivers: [%[5]s]
      processors: [memory_limiter, learning]
      exporters: [k8swriter, forward/violations]
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [nop]
`, name, namespace, receiver, telemetry(metrics), recvName, !lt.unobserved))
}

func (lt *loadtest) writeConfig(name, content string) (string, error) {
	path := filepath.Join(lt.dir, name+".yaml")
	return path, os.WriteFile(path, []byte(content), 0o600)
}

// process is a running program, the binary or a baseline client, its output
// in a log file.
type process struct {
	name, log, metrics string
	cmd                *exec.Cmd
	exited             chan struct{}
}

// start runs the binary with config; its metrics are served on metrics.
func (lt *loadtest) start(name, config, metrics string) (*process, error) {
	return lt.startEnv(name, config, metrics)
}

// startEnv is start with further environment variables.
func (lt *loadtest) startEnv(name, config, metrics string, env ...string) (*process, error) {
	cmd := exec.Command(lt.bin, "--config", config)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+lt.kubeconfig), env...)
	return lt.launch(name, metrics, cmd)
}

// launch starts cmd with the chart's garbage collector settings, its stderr,
// and its stdout unless cmd has one, in a log file of the work directory.
func (lt *loadtest) launch(name, metrics string, cmd *exec.Cmd) (*process, error) {
	lt.runs++
	p := &process{name: name, log: filepath.Join(lt.dir, fmt.Sprintf("%d-%s.log", lt.runs, name)), metrics: metrics, cmd: cmd, exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// The garbage collector's settings as the chart renders them by default
	// (controller.gc), for every run of the binary, the otlp -> nop baseline
	// too, and for the raw clients, so that a CPU ratio compares the work
	// and not the collector's tuning.
	if lt.opts.gogc != "" {
		cmd.Env = append(cmd.Env, "GOGC="+lt.opts.gogc)
	}
	if lt.opts.gomemlimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+lt.opts.gomemlimit)
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
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process with SIGTERM, or SIGKILL when it does not end.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// failed says why the process ended, with the tail of its log.
func (p *process) failed() error {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return fmt.Errorf("%s exited; the end of %s:\n%s", p.name, p.log, b)
}

// cpu is the process's user and system CPU time so far.
func (p *process) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses: utime and
	// stime are the 14th and 15th fields of the line, in clock ticks.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc stat: %q", s)
	}
	const ticksPerSecond = 100 // USER_HZ, the same on every Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// peakRSS is the process's peak resident memory so far (VmHWM).
func (p *process) peakRSS() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
}

// counter sums the samples of the metrics whose names start with name.
func (p *process) counter(name string) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+p.metrics+"/metrics", http.NoBody)
	if err != nil {
		return 0, err
	}
	// Uncompressed: the scrapes are frequent, and compressing them would add
	// to the CPU time measured.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			n += int64(v)
		}
	}
	return n, sc.Err()
}

// waitCounters polls the sum of the counters named until it reaches want, and
// returns when it did. It fails when the process exits or the time is up.
func (lt *loadtest) waitCounters(ctx context.Context, p *process, want int64, names ...string) (time.Time, error) {
	deadline := time.Now().Add(lt.opts.timeout)
	var got int64
	for {
		got = 0
		for _, name := range names {
			n, err := p.counter(name)
			if err != nil {
				got = -1
				break
			}
			got += n
		}
		if got >= want {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s counted %d of %d flows in %s", p.name, got, want, lt.opts.timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-p.exited:
			return time.Time{}, p.failed()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitMetrics waits until the process serves its metrics.
func (lt *loadtest) waitMetrics(ctx context.Context, p *process) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := p.counter("otelcol_"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s serves no metrics on %s", p.name, p.metrics)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return p.failed()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measured closes a side of the process that ran from cpu0 to the end.
func measured(p *process, name string, start, end time.Time, cpu0 time.Duration) (side, error) {
	cpu1, err := p.cpu()
	if err != nil {
		return side{}, err
	}
	rss, err := p.peakRSS()
	if err != nil {
		return side{}, err
	}
	return side{name: name, elapsed: end.Sub(start), cpu: cpu1 - cpu0, peakRSS: rss}, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
