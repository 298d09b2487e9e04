//go:build cluster

// Package cluster proves the product on a real node: the cluster that
// internal/realnodetest runs (kubelet, containerd, runc, kube-proxy,
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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/realnodetest"
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

// startCluster starts the real node with Cilium as its CNI
// (internal/realnodetest), its log in the temporary folder.
func startCluster(root string) (*cluster, error) {
	logPath := filepath.Join(os.TempDir(), "network-enforcer-cluster-"+realnodetest.CNICilium+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := realnodetest.Start(realnodetest.Config{Root: root, CNI: realnodetest.CNICilium, Log: logFile})
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	env.kubeconfig = c.Kubeconfig()
	fmt.Fprintf(os.Stderr, "%s cluster ready in %s (log: %s)\n", c.CNI(), time.Since(start).Round(100*time.Millisecond), logPath)
	return &cluster{
		// The suite ends the node as a killed run would: the guard that Start
		// left beside the test process cleans the host (with the same clean-up
		// as Stop), and nothing of the cluster may be left after it.
		stop: func() error {
			defer logFile.Close()
			if err := c.Abandon(); err != nil {
				return err
			}
			return hostLeftovers()
		},
		restartAgent: c.RestartAgent,
	}, nil
}

// cluster is the running node.
type cluster struct {
	// stop ends the node, which cleans the host, and checks that nothing is
	// left.
	stop func() error
	// restartAgent restarts the Cilium agent and returns once it is ready.
	restartAgent func() error
}
