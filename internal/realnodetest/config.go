package realnodetest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The CNIs that the node can run.
const (
	// CNICilium is the real Cilium agent, with Hubble and the real
	// hubble-relay: the real-node suite runs on it.
	CNICilium = "cilium"
	// CNIBridge is a bridge CNI network with kube-router's NetworkPolicy
	// firewall (`make cluster CNI=bridge`).
	CNIBridge = "bridge"
)

// The node's addresses and names. With the bridge the node's address is the
// pods' gateway, on the bridge; with Cilium it is on a veth pair of its own
// (this kernel has no dummy device), which is the agent's --devices, and the
// agent puts its own cilium_host address in the pod range.
const (
	NodeName      = "ne-node"
	bridgeDev     = "ne-br0"
	bridgeNodeIP  = "10.217.0.1"
	ciliumNodeIP  = "10.217.1.1"
	nodeDev       = "ne-node0"
	nodePeerDev   = "ne-node1"
	podCIDR       = "10.217.0.0/24"
	podPrefixLen  = "24"
	serviceCIDR   = "10.217.16.0/24"
	apiServiceIP  = "10.217.16.1"
	dnsIP         = "10.217.16.10"
	apiPort       = "16443"
	etcdPort      = "23790"
	etcdPeerPort  = "23800"
	hubblePort    = "4244"
	isolationName = "network_enforcer_cluster"

	// The test host outside the cluster (Cilium mode): a network namespace of
	// its own on a link from the node, at an address outside the pod and
	// service ranges.
	OutsideNS   = "ne-outside"
	OutsideIP   = "10.217.32.2"
	outsideDev  = "ne-out0"
	outsidePeer = "ne-out1"
	outsideGW   = "10.217.32.1"
	// OutsideIP2 is a second address of the outside host, which CoreDNS names
	// apart (other.outside.test): a name that a policy does not allow, at an
	// address that no allowed name resolves to.
	OutsideIP2 = "10.217.33.2"
)

// ciliumNodePrefixLen is the size of the Node's pod range in Cilium mode,
// which the controller manager's node IPAM cuts from podCIDR (10.217.0.0/26):
// 61 addresses for pods beside the agent's cilium_host, no fewer than the
// pods that the kubelet admits (maxPods 60), so the node holds as many pods
// as with the whole /24. The agent picks each pod's address at random from
// it; a range this small lets a test hand a deleted pod's address to a new pod
// by starting pods until one has it (test/cluster's address reuse). The
// bridge keeps the whole /24.
const ciliumNodePrefixLen = "26"

// RunDir and LockPath are the machine's: one cluster at a time per machine,
// since it uses the host's kubelet folders, pod log folders and netfilter.
const (
	RunDir   = "/run/network-enforcer-cluster"
	LockPath = "/run/network-enforcer-cluster.lock"
)

// Links are the host links that a run makes (and the agent's cilium_host): a
// stopped cluster leaves none of them.
var Links = []string{bridgeDev, nodeDev, outsideDev, "cilium_host"}

// StateDir is the folder of the cluster's state, logs and PIDs:
// $NETWORK_ENFORCER_CLUSTER_STATE, else /var/lib/network-enforcer-cluster.
func StateDir() string {
	if s := os.Getenv("NETWORK_ENFORCER_CLUSTER_STATE"); s != "" {
		return s
	}
	return "/var/lib/network-enforcer-cluster"
}

// Config is how to run the node.
type Config struct {
	// Root is the project's root: the cluster's binaries come from its
	// hack/cluster/build.sh and its manifests from tools/cluster.
	Root string `json:"root"`
	// CNI is CNICilium (the default) or CNIBridge.
	CNI string `json:"cni"`
	// State is the state folder; the default is StateDir().
	State string `json:"state"`
	// MonitorAggregation is the Cilium agent's --monitor-aggregation
	// (default medium, as Cilium's chart sets it).
	MonitorAggregation string `json:"monitorAggregation"`
	// LockWait is how long to wait for another run on this machine (a test
	// suite in another work tree, `make cluster`) to end, as a test run would
	// wait for a CPU (default 20 minutes).
	LockWait time.Duration `json:"lockWait"`
	// Log receives the run's progress; nil is os.Stderr.
	Log io.Writer `json:"-"`

	// bin is the folder of the cluster's binaries (hack/cluster/build.sh).
	bin string
}

// withDefaults returns cfg with its defaults set, or an error for a value
// that is none of its kind.
func (cfg Config) withDefaults() (Config, error) {
	switch cfg.CNI {
	case "":
		cfg.CNI = CNICilium
	case CNICilium, CNIBridge:
	default:
		return cfg, fmt.Errorf("invalid CNI %q: must be one of %s, %s", cfg.CNI, CNICilium, CNIBridge)
	}
	if cfg.Root == "" {
		return cfg, errors.New("invalid root: the project's root is required")
	}
	if cfg.State == "" {
		cfg.State = StateDir()
	}
	if cfg.MonitorAggregation == "" {
		cfg.MonitorAggregation = "medium"
	}
	if cfg.LockWait == 0 {
		cfg.LockWait = 20 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	out, err := run(filepath.Join(cfg.Root, "hack", "cluster", "build.sh"), "--print")
	if err != nil {
		return cfg, err
	}
	cfg.bin = strings.TrimSpace(out)
	return cfg, nil
}

// binary is the path of one of the cluster's binaries.
func (cfg Config) binary(name string) string { return filepath.Join(cfg.bin, name) }

// nodeIP is the node's address for the CNI.
func (cfg Config) nodeIP() string {
	if cfg.CNI == CNICilium {
		return ciliumNodeIP
	}
	return bridgeNodeIP
}

func (cfg Config) path(elem ...string) string {
	return filepath.Join(append([]string{cfg.State}, elem...)...)
}

func (cfg Config) pki(elem ...string) string { return cfg.path(append([]string{"pki"}, elem...)...) }

// Kubeconfig is the cluster admin's kubeconfig.
func (cfg Config) Kubeconfig() string { return cfg.pki("admin.kubeconfig") }

func (cfg Config) sock() string { return filepath.Join(RunDir, "containerd.sock") }

func (cfg Config) logf(format string, args ...any) {
	fmt.Fprintf(cfg.Log, "cluster: "+format+"\n", args...)
}
