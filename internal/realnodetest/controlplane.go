package realnodetest

import (
	"time"
)

// kubectl runs the node's kubectl as the cluster's admin.
func (cfg Config) kubectl(args ...string) (string, error) {
	return run(cfg.binary("kubectl"), append([]string{"--kubeconfig", cfg.Kubeconfig()}, args...)...)
}

// kubectlIn is kubectl with stdin.
func (cfg Config) kubectlIn(stdin string, args ...string) (string, error) {
	return runIn(nil, stdin, cfg.binary("kubectl"), append([]string{"--kubeconfig", cfg.Kubeconfig()}, args...)...)
}

// ready is a check that kubectl's command succeeds.
func (cfg Config) ready(args ...string) func() error {
	return func() error { _, err := cfg.kubectl(args...); return err }
}

// certificates issues the cluster's certificates, keys and kubeconfigs (and,
// with Cilium, Hubble's).
func (cfg Config) certificates() error {
	args := []string{"-dir", cfg.pki(), "-node", NodeName, "-ip", cfg.nodeIP(), "-service-ip", apiServiceIP,
		"-server", "https://" + cfg.nodeIP() + ":" + apiPort}
	if cfg.CNI == CNICilium {
		args = append(args, "-hubble", cfg.pki("hubble"))
	}
	_, err := run(cfg.path("tools", "pki"), args...)
	return err
}

// controlPlane starts etcd, the API server, the controller manager and the
// scheduler.
func (cfg Config) controlPlane() error {
	etcdURL := "http://127.0.0.1:" + etcdPort
	peerURL := "http://127.0.0.1:" + etcdPeerPort
	if err := cfg.start("etcd", nil, cfg.binary("etcd"), "--name", NodeName, "--data-dir", cfg.path("etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", NodeName+"="+peerURL, "--listen-metrics-urls", ""); err != nil {
		return err
	}
	if err := cfg.start("kube-apiserver", nil, cfg.binary("kube-apiserver"), "--etcd-servers", etcdURL,
		"--bind-address", cfg.nodeIP(), "--advertise-address", cfg.nodeIP(), "--secure-port", apiPort,
		"--tls-cert-file", cfg.pki("apiserver.crt"), "--tls-private-key-file", cfg.pki("apiserver.key"), "--client-ca-file", cfg.pki("ca.crt"),
		"--service-cluster-ip-range", serviceCIDR, "--authorization-mode", "Node,RBAC", "--allow-privileged=true",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", cfg.pki("sa.pub"), "--service-account-signing-key-file", cfg.pki("sa.key"),
		"--kubelet-client-certificate", cfg.pki("apiserver-kubelet-client.crt"), "--kubelet-client-key", cfg.pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority", cfg.pki("ca.crt"), "--kubelet-preferred-address-types", "InternalIP",
		"--cert-dir", cfg.path("apiserver-certs")); err != nil {
		return err
	}
	if err := cfg.waitFor("kube-apiserver", time.Minute, cfg.ready("get", "--raw", "/readyz")); err != nil {
		return err
	}
	// With the bridge, the kubelet is given the pod range; the Cilium agent
	// reads it from the Node, where the controller manager's node IPAM writes
	// it: a /26 of the cluster's range (ciliumNodePrefixLen).
	ipam := []string{"--controllers", "*,-nodeipam"}
	if cfg.CNI == CNICilium {
		ipam = []string{"--controllers", "*", "--allocate-node-cidrs", "--cluster-cidr", podCIDR, "--node-cidr-mask-size", ciliumNodePrefixLen}
	}
	if err := cfg.start("kube-controller-manager", nil, append(append([]string{cfg.binary("kube-controller-manager"),
		"--kubeconfig", cfg.Kubeconfig()}, ipam...),
		"--leader-elect=false", "--secure-port", "0",
		"--service-account-private-key-file", cfg.pki("sa.key"), "--root-ca-file", cfg.pki("ca.crt"), "--use-service-account-credentials",
		"--cluster-signing-cert-file", cfg.pki("ca.crt"), "--cluster-signing-key-file", cfg.pki("ca.key"),
		"--service-cluster-ip-range", serviceCIDR, "--cert-dir", cfg.path("kcm-certs"))...); err != nil {
		return err
	}
	return cfg.start("kube-scheduler", nil, cfg.binary("kube-scheduler"), "--kubeconfig", cfg.Kubeconfig(), "--leader-elect=false",
		"--secure-port", "0", "--authentication-kubeconfig", cfg.Kubeconfig(), "--authorization-kubeconfig", cfg.Kubeconfig())
}
