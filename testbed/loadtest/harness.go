package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/testbed/replicas"
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
	// launcher starts the processes of the run.
	launcher *replicas.Launcher
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
	lt.launcher = &replicas.Launcher{Bin: bin, Dir: dir, GOGC: opts.gogc, GOMEMLIMIT: opts.gomemlimit}
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
	lt.launcher.Kubeconfig = lt.kubeconfig
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

// waitCounters polls the sum of the counters named until it reaches want, and
// returns when it did. It fails when the process exits or the time is up.
func (lt *loadtest) waitCounters(ctx context.Context, p *process, want int64, names ...string) (time.Time, error) {
	deadline := time.Now().Add(lt.opts.timeout)
	var got int64
	for {
		got = 0
		for _, name := range names {
			n, err := p.Counter(name)
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
			return time.Time{}, fmt.Errorf("%s counted %d of %d flows in %s", p.Name, got, want, lt.opts.timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-p.Exited:
			return time.Time{}, p.Failed()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitMetrics waits until the process serves its metrics.
func (lt *loadtest) waitMetrics(ctx context.Context, p *process) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := p.Counter("otelcol_"); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s serves no metrics on %s", p.Name, p.Metrics)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Exited:
			return p.Failed()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measured closes a side of the process that ran from cpu0 to the end.
func measured(p *process, name string, start, end time.Time, cpu0 time.Duration) (side, error) {
	cpu1, err := p.CPU()
	if err != nil {
		return side{}, err
	}
	rss, err := p.PeakRSS()
	if err != nil {
		return side{}, err
	}
	return side{name: name, elapsed: end.Sub(start), cpu: cpu1 - cpu0, peakRSS: rss}, nil
}

// process is a running program, the binary or a baseline client.
type process = replicas.Process

// start runs the binary with config; its metrics are served on metrics.
func (lt *loadtest) start(name, config, metrics string) (*process, error) {
	return lt.launcher.Start(name, config, metrics)
}

// writeConfig writes a configuration of the work directory.
func (lt *loadtest) writeConfig(name, content string) (string, error) {
	return lt.launcher.WriteConfig(name, content)
}

// telemetry is the service::telemetry section that exposes the collector's own
// metrics on addr, with the log quiet.
func telemetry(addr string) string { return replicas.Telemetry(addr) }

func freeAddr() (string, error) { return replicas.FreeAddr() }
