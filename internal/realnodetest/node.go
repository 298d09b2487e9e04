package realnodetest

import (
	"fmt"
	"os"
	"time"
)

// kubelet starts the kubelet and kube-proxy, then the CNI's own parts: the
// Cilium agent, or kube-router's NetworkPolicy firewall.
func (cfg Config) kubelet() error {
	conf := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[2]s}
authorization: {mode: Webhook}
tlsCertFile: %[3]s
tlsPrivateKeyFile: %[4]s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%[5]s
podCIDR: %[6]s
clusterDNS: [%[7]s]
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
maxPods: 60
serializeImagePulls: false
# Mounted Secrets follow their objects within seconds (the default is a
# minute): the tests renew certificates that live for minutes.
syncFrequency: 10s
# A shared disk: never evict or collect images for its use by others.
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%, nodefs.inodesFree: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
`, cfg.nodeIP(), cfg.pki("ca.crt"), cfg.pki("kubelet.crt"), cfg.pki("kubelet.key"), cfg.sock(), podCIDR, dnsIP)
	if err := os.WriteFile(cfg.path("kubelet.yaml"), []byte(conf), 0o644); err != nil {
		return err
	}
	if err := cfg.start("kubelet", nil, cfg.binary("kubelet"), "--config", cfg.path("kubelet.yaml"),
		"--kubeconfig", cfg.pki("node.kubeconfig"), "--node-ip", cfg.nodeIP(), "--hostname-override", NodeName,
		"--root-dir", "/var/lib/kubelet", "--cert-dir", cfg.path("kubelet-certs")); err != nil {
		return err
	}
	if err := cfg.waitFor("node "+NodeName, time.Minute, cfg.ready("get", "node", NodeName)); err != nil {
		return err
	}
	proxy := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clusterCIDR: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["%s/32"]
clientConnection: {kubeconfig: %s}
`, podCIDR, NodeName, cfg.nodeIP(), cfg.nodeIP(), cfg.Kubeconfig())
	if err := os.WriteFile(cfg.path("kube-proxy.yaml"), []byte(proxy), 0o644); err != nil {
		return err
	}
	if err := cfg.start("kube-proxy", nil, cfg.binary("kube-proxy"), "--config", cfg.path("kube-proxy.yaml")); err != nil {
		return err
	}
	nodeReady := cfg.ready("wait", "--for=condition=Ready", "node/"+NodeName, "--timeout=1s")
	if cfg.CNI == CNICilium {
		if err := cfg.agent(); err != nil {
			return err
		}
		return cfg.waitFor("node "+NodeName+" Ready", 2*time.Minute, nodeReady)
	}
	// kube-router exits when its Node does not exist yet: it starts after.
	if err := cfg.start("kube-router", nil, cfg.binary("kube-router"), "--kubeconfig", cfg.Kubeconfig(), "--hostname-override", NodeName,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false",
		"--metrics-port", "0", "--health-port", "0", "--service-cluster-ip-range", serviceCIDR); err != nil {
		return err
	}
	if err := cfg.waitFor("node "+NodeName+" Ready", time.Minute, nodeReady); err != nil {
		return err
	}
	// kube-router's firewall is in place once its forward chain is.
	return cfg.waitFor("kube-router's firewall", 30*time.Second, func() error {
		_, err := run("iptables", "-S", "KUBE-ROUTER-FORWARD")
		return err
	})
}

// dns runs CoreDNS as a Deployment, with the names of the outside host.
func (cfg Config) dns() error {
	manifest, err := cfg.manifest("coredns.yaml", map[string]string{
		"@IMAGE@": "ne.local/coredns:" + resolvedVersion(cfg.binary("coredns")), "@DNS_IP@": dnsIP,
		"@OUTSIDE_IP@": OutsideIP, "@OUTSIDE_IP2@": OutsideIP2,
	})
	if err != nil {
		return err
	}
	if _, err := cfg.kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		return err
	}
	return cfg.waitFor("CoreDNS", 90*time.Second, cfg.ready("-n", "kube-system", "wait", "--for=condition=Available", "deployment/coredns", "--timeout=1s"))
}
