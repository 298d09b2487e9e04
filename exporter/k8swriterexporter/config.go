package k8swriterexporter

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// Config is the configuration of the Kubernetes writer exporter.
type Config struct {
	// Enforcer names the enforcer extension that holds the Kubernetes client
	// and cache.
	Enforcer component.ID `mapstructure:"enforcer"`
	// LeaderElector names the leader elector whose terms run the writer's
	// controller.
	LeaderElector component.ID `mapstructure:"leader_elector"`

	// WriteQPS and WriteBurst rate-limit the writes to the Kubernetes API, so a
	// burst of new edges cannot flood the API server. The first proposals of N
	// workloads take about 4 x N writes: N / 150 writes a second makes them
	// all within 10 minutes (the README's table).
	WriteQPS   float64 `mapstructure:"write_qps"`
	WriteBurst int     `mapstructure:"write_burst"`

	// MaxPortsPerPeer bounds the ports a proposal lists for one peer: more
	// collapse into one range per protocol (kubernetes) or any port (istio).
	MaxPortsPerPeer int `mapstructure:"max_ports_per_peer"`
	// MaxPeers bounds the peers of one proposal: peers learned beyond it are
	// left out.
	MaxPeers int `mapstructure:"max_peers"`

	// StableAfter is how long no new edge must be learned into a proposal
	// for its Stable condition to turn True.
	StableAfter time.Duration `mapstructure:"stable_after"`

	// The bounds of the observed edges in status.observed.
	observed.Config `mapstructure:",squash"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:      enforcerextension.DefaultReference(),
		LeaderElector: leaderelectorextension.DefaultReference(),
		WriteQPS:      DefaultWriteQPS,
		WriteBurst:    DefaultWriteBurst,

		MaxPortsPerPeer: 32,
		MaxPeers:        64,
		StableAfter:     DefaultStableAfter,

		Config: observed.DefaultConfig(),
	}
}

// DefaultWriteQPS and DefaultWriteBurst are the defaults of write_qps and
// write_burst: enough for the first proposals of 3,000 workloads within 10
// minutes of their first flows. With a read of each proposal before its
// write, about 30 requests a second, a small part of the seats of the chart's
// priority level (docs/scaling.md); larger clusters set more.
const (
	DefaultWriteQPS   = 20
	DefaultWriteBurst = 40
)

// DefaultStableAfter is the default of stable_after: a day. Calico's policy
// recommendations count a recommendation stable after 10 minutes unchanged
// (PolicyRecommendationScope stabilizationPeriod, refined every 2.5 minutes);
// Kubescape's node agent learns an application profile for a fixed period
// (maxLearningPeriod, 12 to 24 hours by chart version). Traffic often follows
// a daily cycle (a nightly backup, a daily report): a window shorter than a
// day would call a proposal stable before its workload went through one, and
// protect would then block the first nightly run. A day is the shortest window
// that sees one; set it shorter for a workload without such a cycle.
const DefaultStableAfter = 24 * time.Hour

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if err := leaderelectorextension.ValidateReference(c.LeaderElector); err != nil {
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
	if c.StableAfter <= 0 {
		errs = append(errs, fmt.Errorf("invalid stable_after %s: must be positive", c.StableAfter))
	}
	errs = append(errs, c.Config.Validate()...)
	return errors.Join(errs...)
}
