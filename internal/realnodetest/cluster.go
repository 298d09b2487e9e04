// Package realnodetest runs a real single-node Kubernetes cluster on this
// machine, from Go modules and Debian packages: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, containerd with runc,
// kube-proxy (nftables), CoreDNS and a CNI. The real-node suite
// (test/cluster) starts it through Start; `make cluster` runs it through
// tools/cluster/realnode.
//
// The CNI is the real Cilium agent (CNICilium, the default, which the
// real-node suite runs on), or a bridge CNI network with kube-router's
// NetworkPolicy firewall (CNIBridge). The agent runs on the host, as its
// DaemonSet pod would, with Hubble on behind mutual TLS (the certificates and
// Secrets that Cilium's chart issues), and the real hubble-relay runs as a pod
// that finds the agent through the hubble-peer Service, as in a Cilium
// cluster. kube-proxy stays. Without Cilium's operator (which does not build
// from the module), the agent allocates identities as CRDs and takes the pod
// range from the Node, which the controller manager's node IPAM sets.
//
// One cluster at a time per machine: it uses the host's kubelet folders, pod
// log folders and netfilter, so a lock (LockPath) makes a second run wait.
// Every process is recorded by PID in the state folder and stopped by that
// PID only. Pod traffic stays on the cluster's interfaces: no masquerade, no
// default route in the pods, and a forward rule drops whatever would leave
// them for another interface.
//
// The host is restored however the run ends: Stop cleans it, and a guard
// process that Start leaves beside the caller cleans it when the caller dies
// without Stop (a panic, -timeout, SIGTERM or SIGKILL); a next Start, and
// Down, clean what is left after anything else.
package realnodetest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Cluster is a running node.
type Cluster struct {
	cfg   Config
	lock  *os.File
	guard *guard

	mu      sync.Mutex
	stopped bool
}

// Start cleans what an earlier run left, starts the node and returns once
// every part is up; an error leaves the host clean. It waits for the machine's
// lock up to cfg.LockWait (a *BusyError after that).
func Start(cfg Config) (*Cluster, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.State, 0o755); err != nil {
		return nil, err
	}
	lock, err := cfg.lock()
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, lock: lock}
	cfg.down()
	if c.guard, err = startGuard(cfg); err != nil {
		_ = lock.Close()
		return nil, err
	}
	begin := time.Now()
	if err := cfg.up(); err != nil {
		cfg.logf("%v", err)
		return nil, errors.Join(err, c.Stop())
	}
	cfg.logf("up in %s", time.Since(begin).Round(time.Second))
	return c, nil
}

// Kubeconfig is the path of the cluster admin's kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.cfg.Kubeconfig() }

// CNI is the node's CNI.
func (c *Cluster) CNI() string { return c.cfg.CNI }

// Bin is the folder of the node's binaries (kubectl, cilium-dbg, ...).
func (c *Cluster) Bin() string { return c.cfg.bin }

// Stop deletes the pods while the kubelet still runs, stops every part and
// cleans the host. A second call does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	c.cfg.logf("stopping")
	c.cfg.down()
	c.cfg.logf("host clean")
	err := c.guard.dismiss()
	return errors.Join(err, c.lock.Close())
}

// Abandon lets go of the node as the death of the process that started it
// would: it closes the guard's pipe and the machine's lock, and cleans
// nothing itself. The guard then cleans the host; Abandon returns once it has
// ended, with its failure if it failed. It shows that a killed run leaves a
// clean host.
func (c *Cluster) Abandon() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	return errors.Join(c.lock.Close(), c.guard.abandon())
}

// RestartAgent restarts the Cilium agent's process and returns once it is
// ready again: the datapath stays, as on a restart of the agent's pod.
func (c *Cluster) RestartAgent() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.CNI != CNICilium {
		return errors.New("the node runs no Cilium agent: its CNI is " + c.cfg.CNI)
	}
	c.cfg.logf("restarting the Cilium agent")
	c.cfg.stop("cilium-agent")
	return c.cfg.agentProcess()
}

// up starts every part, in order.
func (cfg Config) up() error {
	steps := []func() error{cfg.packages, cfg.build, cfg.images, cfg.network, cfg.certificates, cfg.controlPlane, cfg.runtime, cfg.kubelet, cfg.dns}
	if cfg.CNI == CNICilium {
		steps = append(steps, cfg.relay)
	}
	steps = append(steps, cfg.alive)
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// build builds the node's binaries that are missing
// (hack/cluster/build.sh): a later run takes no time.
func (cfg Config) build() error {
	cmd := exec.Command(filepath.Join(cfg.Root, "hack", "cluster", "build.sh"))
	cmd.Env = append(os.Environ(), "NETWORK_ENFORCER_CLUSTER_CNI="+cfg.CNI) // kube-router for the bridge only
	cmd.Stderr = cfg.Log
	if err := cmd.Run(); err != nil {
		return &CommandError{Args: cmd.Args, Err: err}
	}
	return nil
}

// lock takes the machine's cluster lock, waiting up to cfg.LockWait for the
// run that holds it. The descriptor is closed on exec: a part that outlived a
// killed run must not hold the lock.
func (cfg Config) lock() (*os.File, error) {
	f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		return f, nil
	}
	cfg.logf("another cluster runs on this machine (lock %s): waiting up to %s", LockPath, cfg.LockWait)
	deadline := time.Now().Add(cfg.LockWait)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			return f, nil
		}
	}
	_ = f.Close()
	return nil, &BusyError{Lock: LockPath, Waited: cfg.LockWait}
}

// packages installs the Debian packages that the node needs and this machine
// lacks.
func (cfg Config) packages() error {
	want := []string{"runc", "containernetworking-plugins", "nftables", "conntrack", "ipset", "iproute2", "iptables"}
	if cfg.CNI == CNICilium {
		want = append(want, "clang-19", "llvm-19") // the agent's loader compiles the datapath
	}
	var missing []string
	for _, p := range want {
		out, _ := run("dpkg-query", "-W", "-f=${Status}", p)
		if !strings.Contains(out, "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	cfg.logf("installing %s", strings.Join(missing, " "))
	if _, err := run("apt-get", "update", "-qq"); err != nil {
		return err
	}
	_, err := runIn([]string{"DEBIAN_FRONTEND=noninteractive"}, "", "apt-get", append([]string{"install", "-y", "-qq"}, missing...)...)
	return err
}
