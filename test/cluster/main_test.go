//go:build cluster

// Package cluster proves the product on a real node: the cluster that
// hack/cluster/cluster.sh runs (kubelet, containerd, runc, kube-proxy,
// CoreDNS, and the real Cilium agent as the node's CNI, with Hubble and the
// real hubble-relay), the image that `make image` builds imported into the
// node, the chart installed with the real helm client, and the data planes
// that the node does not run (Calico's Goldmane, Istio's ztunnel) played by
// pods of the tests' own program (test/cluster/testpod).
//
// The suite starts the cluster itself and stops it at the end, which cleans
// the host; `make test-cluster` runs it. It needs root, and it takes the
// machine's one cluster lock, so it never runs beside `make cluster`.
package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// env is what every test of the package uses: the running cluster.
var env struct {
	root, kubeconfig, helm, bin string
	// certManager is cert-manager's controller binary.
	certManager string
	// missing is why the suite cannot run: a prerequisite that is not built.
	missing error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.root = root
	if env.missing = prerequisites(root); env.missing != nil {
		if controlplanetest.SkipPackage(env.missing) {
			return m.Run()
		}
		fmt.Fprintln(os.Stderr, env.missing)
		return 1
	}
	code := m.Run()
	if err := stopCluster(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the cluster:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// running is the cluster that runs now, started by the first test and
// stopped at the end of the run.
var running struct {
	stop func() error
	// restartAgent restarts the Cilium agent and returns once it is ready
	// again.
	restartAgent func() error
	// imported is whether the suite's images are in the node.
	imported bool
	// certManager is whether cert-manager runs in the cluster.
	certManager bool
}

// useCluster starts the cluster unless it runs, and fails t when it cannot
// start; when it runs, it waits for the namespaces that earlier tests are
// deleting.
func useCluster(t *testing.T) {
	t.Helper()
	if running.stop != nil {
		awaitDeletions(t)
		return
	}
	c, err := startCluster(env.root)
	if err != nil {
		t.Fatal("starting the cluster:", err)
	}
	running.stop, running.restartAgent = c.stop, c.restartAgent
}

func stopCluster() error {
	if running.stop == nil {
		return nil
	}
	err := running.stop()
	running.stop = nil
	return err
}

// prerequisites returns a *controlplanetest.MissingError when the suite cannot
// run here: it needs root (the node's network and mounts), the image tarball of
// `make image`, the pinned helm and the cluster's binaries.
func prerequisites(root string) error {
	if os.Geteuid() != 0 {
		return &controlplanetest.MissingError{What: "root", Target: "test-cluster", Hint: "as root", Detail: "the real node needs root (network namespaces, mounts, netfilter)"}
	}
	tarball := filepath.Join(root, "bin", "network-enforcer-image.tar")
	if _, err := os.Stat(tarball); err != nil {
		return &controlplanetest.MissingError{What: "the distribution's image", Target: "image", Detail: tarball + " is missing"}
	}
	helm, err := charttest.Path()
	if err != nil {
		return err
	}
	env.helm = helm
	if env.certManager, err = controlplanetest.CertManagerController(root); err != nil {
		return err
	}
	out, err := testproc.Command(filepath.Join(root, "hack", "cluster", "build.sh"), "--print").Output()
	if err != nil {
		return fmt.Errorf("hack/cluster/build.sh --print: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	for _, bin := range []string{"kubelet", "kubectl", "containerd", "coredns", "hubble-relay", "etcd", "kube-apiserver", "cilium-agent"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return &controlplanetest.MissingError{What: "the real-node cluster's binaries", Target: "cluster-build", Detail: fmt.Sprintf("%s is missing in %s", bin, dir)}
		}
	}
	env.bin = dir
	return nil
}

// requireCilium skips t, or fails it under NETWORK_ENFORCER_REQUIRE_ALL, when
// the suite's prerequisites are missing; else it runs t on the cluster, whose
// CNI is the Cilium agent.
func requireCilium(t *testing.T) {
	t.Helper()
	controlplanetest.Need(t, env.missing)
	useCluster(t)
}

// cluster is a run of hack/cluster/cluster.sh.
type cluster struct {
	// stop ends the run with SIGTERM, on which the script deletes the pods
	// while the kubelet still runs and then cleans the host.
	stop func() error
	// restartAgent restarts the Cilium agent (SIGUSR1) and waits for the
	// script's word that it is ready again.
	restartAgent func() error
}

// startCluster runs `hack/cluster/cluster.sh run` with Cilium as the CNI and
// waits for its ready line.
func startCluster(root string) (*cluster, error) {
	const cni = "cilium"
	logPath := filepath.Join(os.TempDir(), "network-enforcer-cluster-"+cni+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// SIGTERM when the test process dies: the script traps it and cleans the
	// host, which SIGKILL would not let it do.
	cmd := testproc.Tie(exec.Command(filepath.Join(root, "hack", "cluster", "cluster.sh"), "run"), syscall.SIGTERM)
	cmd.Env = append(os.Environ(), "NETWORK_ENFORCER_CLUSTER_CNI="+cni)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	restarted := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if kc, ok := strings.CutPrefix(sc.Text(), "cluster ready: KUBECONFIG="); ok {
				ready <- kc
			}
			if sc.Text() == "cilium agent restarted" {
				restarted <- struct{}{}
			}
		}
		close(ready)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	stop := func() error {
		// SIGTERM twice, a second apart, as an interrupted test run sends it
		// (hack/test.sh's clean-up, then the kernel's when the test process
		// dies): the second must not cut the host's clean-up short.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		again := time.After(time.Second)
		deadline := time.After(3 * time.Minute)
		for {
			select {
			case <-again:
				_ = cmd.Process.Signal(syscall.SIGTERM)
			case err := <-done:
				var exit *exec.ExitError
				if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 143) {
					return err
				}
				return hostLeftovers()
			case <-deadline:
				_ = cmd.Process.Kill()
				return fmt.Errorf("cluster.sh did not stop in 3 minutes; see %s", logPath)
			}
		}
	}
	restartAgent := func() error {
		if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
			return err
		}
		select {
		case <-restarted:
			return nil
		case <-time.After(5 * time.Minute):
			return fmt.Errorf("the Cilium agent was not ready 5 minutes after its restart; see %s", logPath)
		}
	}
	select {
	case kc, ok := <-ready:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("cluster.sh ended before the cluster was ready; see %s", logPath)
		}
		env.kubeconfig = kc
		fmt.Fprintf(os.Stderr, "%s cluster ready in %s (log: %s)\n", cni, time.Since(start).Round(100*time.Millisecond), logPath)
		return &cluster{stop: stop, restartAgent: restartAgent}, nil
	case <-time.After(20 * time.Minute):
		_ = stop()
		return nil, fmt.Errorf("the cluster was not ready in 20 minutes; see %s", logPath)
	}
}
