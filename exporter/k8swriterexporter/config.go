package k8swriterexporter

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// Config is the configuration of the Kubernetes writer exporter.
type Config struct {
	// Enforcer names the enforcer extension that elects the leader and holds the
	// Kubernetes client and cache.
	Enforcer component.ID `mapstructure:"enforcer"`

	// WriteQPS and WriteBurst rate-limit the writes to the Kubernetes API, so a
	// burst of new edges cannot flood the API server.
	WriteQPS   float64 `mapstructure:"write_qps"`
	WriteBurst int     `mapstructure:"write_burst"`

	// MaxPortsPerPeer bounds the ports a proposal lists for one peer: more
	// collapse into one range per protocol (kubernetes) or any port (istio).
	MaxPortsPerPeer int `mapstructure:"max_ports_per_peer"`
	// MaxPeers bounds the peers of one proposal: peers learned beyond it are
	// left out.
	MaxPeers int `mapstructure:"max_peers"`

	// ObservedInterval is how often, at most, a proposal's observed edges
	// are written to its status: their flow counts change with every flow,
	// so the writes follow this interval, not the flow rate.
	ObservedInterval time.Duration `mapstructure:"observed_interval"`
	// MaxObserved bounds the edges that status.observed lists, the most
	// recently seen; the totals count the rest.
	MaxObserved int `mapstructure:"max_observed"`
	// MaxTrackedEdges bounds the distinct observed edges held in memory for
	// one proposal; new edges beyond it are counted in
	// network_enforcer_observed_edges_untracked, not tracked.
	MaxTrackedEdges int `mapstructure:"max_tracked_edges"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:   enforcerextension.DefaultReference(),
		WriteQPS:   5,
		WriteBurst: 10,

		MaxPortsPerPeer: 32,
		MaxPeers:        64,

		ObservedInterval: time.Minute,
		MaxObserved:      32,
		MaxTrackedEdges:  1024,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if c.WriteQPS <= 0 {
		errs = append(errs, fmt.Errorf("invalid write_qps %v: must be positive", c.WriteQPS))
	}
	if c.WriteBurst < 1 {
		errs = append(errs, fmt.Errorf("invalid write_burst %d: must be at least 1", c.WriteBurst))
	}
	if c.MaxPortsPerPeer < 1 {
		errs = append(errs, fmt.Errorf("invalid max_ports_per_peer %d: must be at least 1", c.MaxPortsPerPeer))
	}
	if c.MaxPeers < 1 {
		errs = append(errs, fmt.Errorf("invalid max_peers %d: must be at least 1", c.MaxPeers))
	}
	if c.ObservedInterval < time.Second {
		errs = append(errs, fmt.Errorf("invalid observed_interval %s: must be at least 1s", c.ObservedInterval))
	}
	if c.MaxObserved < 1 || c.MaxObserved > v1alpha1.MaxObservedEdges {
		errs = append(errs, fmt.Errorf("invalid max_observed %d: must be between 1 and %d", c.MaxObserved, v1alpha1.MaxObservedEdges))
	}
	if c.MaxTrackedEdges < c.MaxObserved {
		errs = append(errs, fmt.Errorf("invalid max_tracked_edges %d: must be at least max_observed (%d)", c.MaxTrackedEdges, c.MaxObserved))
	}
	return errors.Join(errs...)
}
