package violationprocessor

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// Config is the configuration of the violation processor.
type Config struct {
	// Enforcer names the enforcer extension whose Kubernetes cache resolves pods
	// and policies.
	Enforcer component.ID `mapstructure:"enforcer"`
	// LeaderElector names the leader elector whose terms run the status
	// owner's controller.
	LeaderElector component.ID `mapstructure:"leader_elector"`

	// StatusSyncInterval is how often the leader merges the buffered
	// observations and the acknowledgements into the policies' status.
	StatusSyncInterval time.Duration `mapstructure:"status_sync_interval"`

	// MaxBuffered bounds the distinct violation records buffered between two
	// status syncs; a repeat of a buffered record takes no room. What does not
	// fit is counted and logged; its event has been sent already.
	MaxBuffered int `mapstructure:"max_buffered"`

	// Observe lists, in each policy's status, the edges observed for its
	// workload and direction, allowed or not, with the verdict of its spec,
	// and each rule's last use. On by default.
	Observe bool `mapstructure:"observe"`
	// The bounds of the observed edges in status.observed.
	observed.Config `mapstructure:",squash"`
	// UnusedRuleAge is how long a rule may go unused before the UnusedRules
	// condition names it.
	UnusedRuleAge time.Duration `mapstructure:"unused_rule_age"`

	// Amend hands each violation that is not acknowledged, and whose peer a
	// spec can name, on as an edge of the policy's amendment, which the
	// writer learns: learning goes on after promotion. On by default.
	Amend bool `mapstructure:"amend"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:           enforcerextension.DefaultReference(),
		LeaderElector:      leaderelectorextension.DefaultReference(),
		StatusSyncInterval: 30 * time.Second,
		MaxBuffered:        10000,
		Observe:            true,
		Config:             observed.DefaultConfig(),
		UnusedRuleAge:      7 * 24 * time.Hour,
		Amend:              true,
	}
}

// minStatusSyncInterval keeps the status sync from rewriting every policy many
// times a second.
const minStatusSyncInterval = time.Second

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if err := leaderelectorextension.ValidateReference(c.LeaderElector); err != nil {
		errs = append(errs, err)
	}
	if c.StatusSyncInterval < minStatusSyncInterval {
		errs = append(errs, fmt.Errorf("invalid status_sync_interval %s: must be at least %s", c.StatusSyncInterval, minStatusSyncInterval))
	}
	if c.MaxBuffered < 1 {
		errs = append(errs, fmt.Errorf("invalid max_buffered %d: must be at least 1", c.MaxBuffered))
	}
	errs = append(errs, c.Config.Validate()...)
	if c.UnusedRuleAge < time.Minute {
		errs = append(errs, fmt.Errorf("invalid unused_rule_age %s: must be at least 1m", c.UnusedRuleAge))
	}
	return errors.Join(errs...)
}
