package realnodetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// hubbleSecrets puts the Hubble certificates in the Secrets that Cilium's
// chart makes (kube-system: cilium-ca, hubble-server-certs,
// hubble-relay-client-certs, hubble-relay-server-certs), each with ca.crt.
func (cfg Config) hubbleSecrets() error {
	dir := cfg.pki("hubble")
	if _, err := cfg.kubectl("-n", "kube-system", "create", "secret", "generic", "cilium-ca",
		"--from-file=ca.crt="+filepath.Join(dir, "ca.crt"), "--from-file=ca.key="+filepath.Join(dir, "ca.key")); err != nil {
		return err
	}
	for _, name := range []string{"hubble-server", "hubble-relay-client", "hubble-relay-server"} {
		if _, err := cfg.kubectl("-n", "kube-system", "create", "secret", "generic", name+"-certs", "--type=kubernetes.io/tls",
			"--from-file=tls.crt="+filepath.Join(dir, name+".crt"), "--from-file=tls.key="+filepath.Join(dir, name+".key"),
			"--from-file=ca.crt="+filepath.Join(dir, "ca.crt")); err != nil {
			return err
		}
	}
	return nil
}

// agent starts the Cilium agent on the host, as its DaemonSet pod would run:
// Cilium's CRDs first (the operator, which does not build from the module,
// would install them), then the agent in a mount namespace of its own, where
// kernel.unprivileged_bpf_disabled is a plain file (the agent sets it to 1,
// which the host could not undo before a reboot). Its bpffs and cgroup2
// mounts are the host's, so that the clean-up finds them.
func (cfg Config) agent() error {
	if _, err := cfg.kubectl("apply", "--server-side", "-f", cfg.binary("crds")+"/"); err != nil {
		return err
	}
	if err := cfg.hubbleSecrets(); err != nil {
		return err
	}
	if !mounted("/sys/fs/bpf") {
		if _, err := run("mount", "-t", "bpf", "bpf", "/sys/fs/bpf"); err != nil {
			return err
		}
		if err := os.WriteFile(cfg.path("bpffs.mounted"), nil, 0o644); err != nil {
			return err
		}
	}
	for _, dir := range []string{"/run/cilium/cgroupv2", cfg.path("cilium", "path")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if !mounted("/run/cilium/cgroupv2") {
		if _, err := run("mount", "-t", "cgroup2", "none", "/run/cilium/cgroupv2"); err != nil {
			return err
		}
	}
	// Cilium's loader compiles the datapath with clang and llc from PATH.
	for tool, name := range map[string]string{"clang": "clang-19", "llc": "llc-19"} {
		path, err := exec.LookPath(name)
		if err != nil {
			return err
		}
		link := cfg.path("cilium", "path", tool)
		_ = os.Remove(link)
		if err := os.Symlink(path, link); err != nil {
			return err
		}
	}
	if err := os.WriteFile(cfg.path("cilium", "unprivileged_bpf_disabled"), []byte("0\n"), 0o644); err != nil {
		return err
	}
	return cfg.agentProcess()
}

// agentProcess starts the Cilium agent's process and waits until it is ready.
// Its L7 proxy is on for its DNS proxy, which DNS visibility and toFQDNs rules
// need; Envoy, which only HTTP rules need, is external and not run. Its Hubble
// buffer holds 16383 flows (the chart's default is 4095), so that a whole
// journey of the real-node suite can be captured from it. A restart calls it
// again: the datapath stays, as on a restart of the agent's pod, and Hubble's
// buffer starts empty.
func (cfg Config) agentProcess() error {
	lib, err := filepath.EvalSymlinks(cfg.binary("lib"))
	if err != nil {
		return err
	}
	hubble := cfg.pki("hubble")
	env := []string{"PATH=" + cfg.path("cilium", "path") + ":" + os.Getenv("PATH"), "K8S_NODE_NAME=" + NodeName}
	if err := cfg.start("cilium-agent", env,
		"unshare", "--mount", "--propagation", "slave", "--",
		"sh", "-c", `mount --bind "$0" /proc/sys/kernel/unprivileged_bpf_disabled && exec "$@"`,
		cfg.path("cilium", "unprivileged_bpf_disabled"), cfg.binary("cilium-agent"),
		"--k8s-kubeconfig-path", cfg.Kubeconfig(), "--lib-dir", lib, "--state-dir", "/run/cilium",
		"--ipam", "kubernetes", "--k8s-require-ipv4-pod-cidr", "--routing-mode", "native", "--ipv4-native-routing-cidr", podCIDR,
		"--enable-ipv6=false", "--kube-proxy-replacement=false", "--enable-ipv4-masquerade=false",
		"--enable-host-legacy-routing=true", "--devices", nodeDev, "--enable-policy", "default",
		"--enable-l7-proxy=true", "--external-envoy-proxy=true",
		"--enable-health-checking=false", "--enable-endpoint-health-checking=false",
		"--cni-exclusive=false", "--cgroup-root", "/run/cilium/cgroupv2", "--identity-allocation-mode", "crd",
		"--cluster-name", "default", "--monitor-aggregation", cfg.MonitorAggregation,
		"--enable-hubble", "--hubble-listen-address", cfg.nodeIP()+":"+hubblePort, "--hubble-disable-tls=false",
		"--hubble-event-buffer-capacity", "16383",
		"--hubble-tls-cert-file", filepath.Join(hubble, "hubble-server.crt"), "--hubble-tls-key-file", filepath.Join(hubble, "hubble-server.key"),
		"--hubble-tls-client-ca-files", filepath.Join(hubble, "ca.crt")); err != nil {
		return err
	}
	return cfg.waitFor("the Cilium agent", 5*time.Minute, func() error {
		if !cfg.running("cilium-agent") {
			return &ExitedError{Part: "cilium-agent", Log: cfg.path("logs", "cilium-agent.log")}
		}
		_, err := run(cfg.binary("cilium-dbg"), "status", "--brief")
		return err
	})
}

// relay runs the real hubble-relay as Cilium's chart does: a Deployment in
// kube-system that finds the agents through the hubble-peer Service (here one
// with no selector: the agent is not a pod) and reads them over mutual TLS.
func (cfg Config) relay() error {
	manifest, err := cfg.manifest("hubble-relay.yaml", map[string]string{
		"@IMAGE@": cfg.relayImage(), "@NODE_IP@": cfg.nodeIP(), "@HUBBLE_PORT@": hubblePort,
	})
	if err != nil {
		return err
	}
	if _, err := cfg.kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		return err
	}
	return cfg.waitFor("hubble-relay", 2*time.Minute, cfg.ready("-n", "kube-system", "wait", "--for=condition=Available", "deployment/hubble-relay", "--timeout=1s"))
}

// manifest is a manifest of tools/cluster with its placeholders filled in.
func (cfg Config) manifest(name string, values map[string]string) (string, error) {
	b, err := os.ReadFile(filepath.Join(cfg.Root, "tools", "cluster", name))
	if err != nil {
		return "", err
	}
	s := string(b)
	for k, v := range values {
		s = strings.ReplaceAll(s, k, v)
	}
	return s, nil
}
