package learningprocessor

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// OutsidePeers says what learning does with a flow whose peer is outside the
// cluster's workloads (the world, a network, a node, a host-network pod).
type OutsidePeers string

const (
	// OutsidePeersDrop drops such a side and counts it: the learned policy
	// then does not allow that peer.
	OutsidePeersDrop OutsidePeers = "drop"
	// OutsidePeersIPBlocks learns such a peer as an address block, the flow's
	// peer address cut to the configured prefix length.
	OutsidePeersIPBlocks OutsidePeers = "ip_blocks"
	// OutsidePeersEntities learns such a peer as what it is: the API server as
	// the API server, a node or host-network pod as the nodes, an outside
	// service by the DNS name that the data plane gives for it; an address
	// block (as ip_blocks) only for an outside peer that has no name.
	OutsidePeersEntities OutsidePeers = "entities"
)

// The prefix lengths that an outside peer's address may be cut to: a block
// wider than these is no longer an address that was seen but a large part of
// the Internet, and likely the cluster's own pod network.
const (
	minIPv4Prefix = 8
	minIPv6Prefix = 32
)

// Config is the configuration of the learning processor.
type Config struct {
	// Enforcer names the enforcer extension whose Kubernetes cache resolves pods
	// and policies.
	Enforcer component.ID `mapstructure:"enforcer"`

	// OutsidePeers is drop (the default), ip_blocks or entities.
	OutsidePeers OutsidePeers `mapstructure:"outside_peers"`
	// CiliumBackend is the backend of what is learned from Cilium's flows:
	// kubernetes (a NetworkPolicy, the default) or cilium (a
	// CiliumNetworkPolicy, which can name the API server, the nodes and DNS
	// names as Cilium enforces them).
	CiliumBackend v1alpha1.Backend `mapstructure:"cilium_backend"`
	// IPv4Prefix and IPv6Prefix are the prefix lengths that an outside peer's
	// address is cut to with ip_blocks: 32 and 128 (the address itself) by
	// default, so that nothing is allowed that was not seen.
	IPv4Prefix int `mapstructure:"ipv4_prefix"`
	IPv6Prefix int `mapstructure:"ipv6_prefix"`

	// Observe hands on, with each learned edge, how many flows of a batch it
	// stands for and when the newest was seen, and hands on the edges whose
	// peer is left out as observations: the proposal writer lists them in the
	// proposal's status. On by default.
	Observe bool `mapstructure:"observe"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{Enforcer: enforcerextension.DefaultReference(), OutsidePeers: OutsidePeersDrop, CiliumBackend: v1alpha1.BackendKubernetes, IPv4Prefix: 32, IPv6Prefix: 128, Observe: true}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	switch c.OutsidePeers {
	case OutsidePeersDrop, OutsidePeersIPBlocks, OutsidePeersEntities:
	default:
		errs = append(errs, fmt.Errorf("invalid outside_peers %q: must be one of %s, %s, %s",
			c.OutsidePeers, OutsidePeersDrop, OutsidePeersIPBlocks, OutsidePeersEntities))
	}
	if c.CiliumBackend != v1alpha1.BackendKubernetes && c.CiliumBackend != v1alpha1.BackendCilium {
		errs = append(errs, fmt.Errorf("invalid cilium_backend %q: must be one of %s, %s",
			c.CiliumBackend, v1alpha1.BackendKubernetes, v1alpha1.BackendCilium))
	}
	if c.IPv4Prefix < minIPv4Prefix || c.IPv4Prefix > 32 {
		errs = append(errs, fmt.Errorf("invalid ipv4_prefix %d: must be between %d and 32", c.IPv4Prefix, minIPv4Prefix))
	}
	if c.IPv6Prefix < minIPv6Prefix || c.IPv6Prefix > 128 {
		errs = append(errs, fmt.Errorf("invalid ipv6_prefix %d: must be between %d and 128", c.IPv6Prefix, minIPv6Prefix))
	}
	return errors.Join(errs...)
}
