package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// namespace is where the chart would install the enforcer; its Lease lives here.
const namespace = "network-enforcer"

// demo is the state of one run.
type demo struct {
	root, dir  string
	started    time.Time
	steps      int
	env        *controlplanetest.Env
	kubeconfig string
	ca         *certtest.CA
	relay      *dataplanetest.HubbleRelay
	relayAddr  string
	relaySrv   *grpc.Server
	procs      []*process
	enforcer   *process
	collector  *process
	metrics    string
	reviewURL  string // the review page, set by serveReview
}

// step prints a numbered step with the time since the demo started.
func (d *demo) step(title string) {
	d.steps++
	fmt.Printf("\n==> [%d] %s (%s)\n", d.steps, title, time.Since(d.started).Round(time.Second))
}

func (d *demo) info(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }

func (d *demo) startControlPlane(ctx context.Context) error {
	env, err := controlplanetest.New(controlplanetest.Options{ControllerManager: true})
	if err != nil {
		return err
	}
	d.env = env
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := env.WriteKubeconfig(d.kubeconfig); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := env.Client.Create(ctx, ns); err != nil {
		return err
	}
	addr, _ := env.APIServerAddr()
	d.info("kube-apiserver at %s; kubeconfig: %s", addr, d.kubeconfig)
	return nil
}

func (d *demo) createWorkloads(ctx context.Context) error {
	if err := clustertest.Create(ctx, d.env.Client); err != nil {
		return err
	}
	byNS := map[string][]string{}
	var order []string
	for _, w := range clustertest.Workloads() {
		if _, ok := byNS[w.Namespace]; !ok {
			order = append(order, w.Namespace)
		}
		byNS[w.Namespace] = append(byNS[w.Namespace], w.Kind+"/"+w.Name)
	}
	for _, ns := range order {
		d.info("%-12s %s", ns, strings.Join(byNS[ns], ", "))
	}
	return nil
}

func (d *demo) startRelay(context.Context) error {
	certs := filepath.Join(d.dir, "certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return err
	}
	ca, err := certtest.NewCAIn(certs, "demo")
	if err != nil {
		return err
	}
	d.ca = ca
	pair, err := ca.IssueServer("hubble-relay", relayServerName)
	if err != nil {
		return err
	}
	flows, err := dataplanetest.LoadHubble(filepath.Join(d.root, dataplanetest.HubbleFixture))
	if err != nil {
		return err
	}
	// The recording is of a past day: replay it as if it had just happened,
	// so that the relay's buffer serves it to the enforcer's backfill.
	var last time.Time
	for _, f := range flows {
		if t := f.GetTime().AsTime(); f.GetTime() != nil && t.After(last) {
			last = t
		}
	}
	shift := time.Since(last)
	for _, f := range flows {
		if f.GetTime() == nil {
			continue
		}
		at := timestamppb.New(f.GetTime().AsTime().Add(shift))
		f.Time = at
		if fl := f.GetFlow(); fl != nil {
			fl.Time = at
		}
	}
	named := nameOutsideService(flows)
	d.relay = dataplanetest.NewHubbleRelay(flows)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	d.relayAddr = lis.Addr().String()
	// Mutual TLS, as Hubble Relay with hubble.tls enabled.
	d.relaySrv = grpc.NewServer(grpc.Creds(credentials.NewTLS(certtest.ServerTLS(pair, ca))))
	observer.RegisterObserverServer(d.relaySrv, d.relay)
	go func() { _ = d.relaySrv.Serve(lis) }()
	d.info("Hubble Relay (Observer.GetFlows) at %s, %d recorded flows", d.relayAddr, len(flows))
	d.info("the cart's call to %s:443 carries destination_names [%s], as the agent reports it with Cilium's DNS visibility on",
		outsideAddress, outsideName)
	if named == 0 {
		return fmt.Errorf("the recorded flows have no call to %s", outsideAddress)
	}
	return nil
}

// process is a running collector binary, its output in a log file.
type process struct {
	name, log string
	cmd       *exec.Cmd
	exited    chan struct{}
}

func (d *demo) startProcess(name, config string) (*process, error) {
	p := &process{name: name, log: filepath.Join(d.dir, name+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	bin, err := controlplanetest.Binary()
	if err != nil {
		out.Close()
		return nil, err
	}
	p.cmd = exec.Command(bin, "--config", config)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	d.procs = append(d.procs, p)
	return p, nil
}

// logContains reports whether the process's log has s.
func (p *process) logContains(s string) bool {
	b, _ := os.ReadFile(p.log)
	return strings.Contains(string(b), s)
}

// logTail is the last n lines of the process's log: what a reader of a
// failed run needs first, where the log itself may be gone with its folder.
func (p *process) logTail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// waitLog waits until the process logs s, failing if it exits first.
func (d *demo) waitLog(ctx context.Context, p *process, s string, timeout time.Duration) error {
	return d.poll(ctx, fmt.Sprintf("%q in %s", s, p.log), timeout, func() (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("%s exited; see %s, which ends:\n%s", p.name, p.log, p.logTail(20))
		default:
		}
		return p.logContains(s), nil
	})
}

// poll calls cond until it is true, fails, or the time is up.
func (d *demo) poll(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends what the demo started, the newest first.
func (d *demo) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		p := d.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if d.relaySrv != nil {
		d.relaySrv.Stop()
	}
	if d.env != nil {
		if err := d.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}
}
