package hubblereceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Config is the configuration of the hubble receiver. Where it reads the
// flows is a sub-configuration, exactly one of relay and nodes (modes.go),
// each with the keys and defaults of its own; what follows them is common to
// both.
type Config struct {
	// Relay reads every node's flows through Hubble Relay.
	Relay configoptional.Optional[RelayConfig] `mapstructure:"relay"`
	// Nodes reads each node's Hubble server, the nodes found through Cilium's
	// Peer service as Hubble Relay finds them.
	Nodes configoptional.Optional[NodesConfig] `mapstructure:"nodes"`

	// Backfill asks Hubble, when a stream starts with nothing to resume
	// from, for the flows in its buffer: Hubble Relay's, or in nodes mode
	// each node's.
	Backfill BackfillConfig `mapstructure:"backfill"`

	// Reconnect is the backoff between attempts to re-open a broken stream.
	Reconnect flowsource.ReconnectConfig `mapstructure:"reconnect"`

	// Batch groups the records handed to the pipeline: up to max_size records,
	// none waiting longer than timeout.
	Batch flowsource.BatchConfig `mapstructure:"batch"`

	// LeaderElector, when set, names the leader elector whose terms gate
	// the stream in relay mode: only the leader replica reads flows, and each
	// new term starts with the backfill (or where the previous leader handed
	// the stream over). Unset, the receiver streams from start to shutdown.
	LeaderElector *component.ID `mapstructure:"leader_elector"`

	// Enforcer, when set, names the enforcer extension whose membership, in
	// nodes mode, shares the nodes among the replicas: each reads the nodes it
	// owns. Unset, every node is read.
	Enforcer *component.ID `mapstructure:"enforcer"`

	_ struct{}
}

// BackfillConfig selects the buffered flows read on start.
type BackfillConfig struct {
	// Enabled turns backfill on.
	Enabled bool `mapstructure:"enabled"`
	// Since reads the buffered flows of this last period.
	Since time.Duration `mapstructure:"since"`
	// Number, when not zero, reads at most this many of the newest buffered flows.
	Number uint64 `mapstructure:"number"`
}

// createDefaultConfig holds each mode's defaults, neither mode set: a mode
// is set by its key in the configuration (even with nothing under it), and
// then starts from its own defaults.
func createDefaultConfig() component.Config {
	return &Config{
		Relay:     configoptional.Default(defaultRelayConfig()),
		Nodes:     configoptional.Default(defaultNodesConfig()),
		Backfill:  BackfillConfig{Enabled: true, Since: 5 * time.Minute},
		Reconnect: flowsource.NewDefaultReconnectConfig(),
		Batch:     flowsource.NewDefaultBatchConfig(),
	}
}

// errOneMode is the error of a configuration that sets no mode or both.
var errOneMode = errors.New("exactly one of relay, nodes must be set: relay reads Hubble Relay, nodes each node's Hubble server")

// Validate checks the common settings and that exactly one mode is set; the
// collector validates the mode's own settings (RelayConfig.Validate,
// NodesConfig.Validate).
func (c *Config) Validate() error {
	var errs []error
	if c.Relay.HasValue() == c.Nodes.HasValue() {
		errs = append(errs, errOneMode)
	}
	if c.LeaderElector != nil {
		if err := leaderelectorextension.ValidateReference(*c.LeaderElector); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Enforcer != nil {
		if err := enforcerextension.ValidateReference(*c.Enforcer); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Backfill.Since < 0 {
		errs = append(errs, fmt.Errorf("invalid backfill::since %s: must not be negative", c.Backfill.Since))
	}
	errs = append(errs, c.Batch.Check("batch")...)
	return errors.Join(errs...)
}
