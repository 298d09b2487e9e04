package realnodetest

import (
	"fmt"
	"os"
	"strings"
)

// network makes the node's network: the CNI's links and the isolation rules
// that keep pod traffic on the machine (no masquerade, no default route in
// the pods, and a forward hook that drops what would leave the cluster's
// interfaces), and the CNI configuration.
func (cfg Config) network() error {
	if !exists(cfg.path("nft-tables.before")) {
		if err := os.WriteFile(cfg.path("nft-tables.before"), []byte(strings.Join(nftTables(), "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	for _, key := range sysctls {
		cfg.rememberSysctl(key)
	}
	if err := cfg.setSysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	if cfg.CNI == CNICilium {
		return cfg.ciliumNetwork()
	}
	return cfg.bridgeNetwork()
}

// bridgeNetwork makes the bridge, with the node's address as the pods'
// gateway; kube-router filters pod-to-pod traffic on it through iptables.
func (cfg Config) bridgeNetwork() error {
	quiet("modprobe", "br_netfilter")
	if err := cfg.setSysctl("net.bridge.bridge-nf-call-iptables", "1"); err != nil {
		return err
	}
	if err := runAll(
		[]string{"ip", "link", "add", bridgeDev, "type", "bridge"},
		[]string{"ip", "addr", "add", cfg.nodeIP() + "/" + podPrefixLen, "dev", bridgeDev},
		[]string{"ip", "link", "set", bridgeDev, "up"},
	); err != nil {
		return err
	}
	if _, err := runIn(nil, fmt.Sprintf(`table inet %s {
	chain forward {
		type filter hook forward priority -10; policy accept;
		iifname "%[2]s" oifname != "%[2]s" drop
		oifname "%[2]s" iifname != "%[2]s" drop
	}
}
`, isolationName, bridgeDev), "nft", "-f", "-"); err != nil {
		return err
	}
	return cfg.writeCNI("10-network-enforcer.conflist", fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "network-enforcer",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": %q}],
        "dataDir": %q
      }
    }
  ]
}
`, bridgeDev, podCIDR, cfg.nodeIP(), serviceCIDR, RunDir+"/cni-ipam"))
}

// ciliumNetwork makes the node's device, the outside test host and the
// isolation rules of Cilium mode, and the CNI configuration that calls the
// agent's plugin. Pod traffic has no way off the machine: the forward hook
// drops any packet from or to the pod range on an interface that is not the
// cluster's (the pods' lxc*, the agent's cilium_*, this package's ne-*), and
// the agent masquerades nothing.
func (cfg Config) ciliumNetwork() error {
	ns := func(args ...string) []string { return append([]string{"ip", "-n", OutsideNS}, args...) }
	if err := runAll(
		[]string{"ip", "link", "add", nodeDev, "type", "veth", "peer", "name", nodePeerDev},
		[]string{"ip", "addr", "add", cfg.nodeIP() + "/24", "dev", nodeDev},
		[]string{"ip", "link", "set", nodePeerDev, "up"},
		[]string{"ip", "link", "set", nodeDev, "up"},
		[]string{"ip", "netns", "add", OutsideNS},
		[]string{"ip", "link", "add", outsideDev, "type", "veth", "peer", "name", outsidePeer, "netns", OutsideNS},
		[]string{"ip", "addr", "add", outsideGW + "/30", "dev", outsideDev},
		[]string{"ip", "link", "set", outsideDev, "up"},
		ns("addr", "add", OutsideIP+"/30", "dev", outsidePeer),
		ns("link", "set", outsidePeer, "up"),
		ns("link", "set", "lo", "up"),
		ns("route", "add", podCIDR, "via", outsideGW),
		ns("addr", "add", OutsideIP2+"/32", "dev", outsidePeer),
		[]string{"ip", "route", "add", OutsideIP2 + "/32", "via", OutsideIP, "dev", outsideDev},
	); err != nil {
		return err
	}
	if _, err := runIn(nil, fmt.Sprintf(`table inet %s {
	chain forward {
		type filter hook forward priority -10; policy accept;
		ip saddr %[2]s oifname "lxc*" accept
		ip saddr %[2]s oifname "cilium_*" accept
		ip saddr %[2]s oifname "ne-*" accept
		ip saddr %[2]s drop
		ip daddr %[2]s iifname "lxc*" accept
		ip daddr %[2]s iifname "cilium_*" accept
		ip daddr %[2]s iifname "ne-*" accept
		ip daddr %[2]s drop
	}
}
`, isolationName, podCIDR), "nft", "-f", "-"); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.path("cni-bin"), 0o755); err != nil {
		return err
	}
	_ = os.Remove(cfg.path("cni-bin", "cilium-cni"))
	if err := os.Symlink(cfg.binary("cilium-cni"), cfg.path("cni-bin", "cilium-cni")); err != nil {
		return err
	}
	return cfg.writeCNI("05-cilium.conflist", fmt.Sprintf(`{
  "cniVersion": "0.3.1",
  "name": "cilium",
  "plugins": [{"type": "cilium-cni", "enable-debug": false, "log-file": %q}]
}
`, cfg.path("logs", "cilium-cni.log")))
}

func (cfg Config) writeCNI(name, conf string) error {
	if err := os.MkdirAll(cfg.path("cni"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(cfg.path("cni", name), []byte(conf), 0o644)
}
