package violationprocessor

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// Config is the configuration of the violation processor.
type Config struct {
	// Enforcer names the enforcer extension whose Kubernetes cache resolves pods
	// and policies, and which elects the leader that writes policy status.
	Enforcer component.ID `mapstructure:"enforcer"`

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
	// ObservedInterval is how often, at most, a policy's observed edges are
	// written to its status when nothing else of it changes.
	ObservedInterval time.Duration `mapstructure:"observed_interval"`
	// MaxObserved bounds the edges that status.observed lists, the most
	// recently seen; the totals count the rest.
	MaxObserved int `mapstructure:"max_observed"`
	// MaxTrackedEdges bounds the distinct observed edges held in memory for
	// one policy.
	MaxTrackedEdges int `mapstructure:"max_tracked_edges"`
	// UnusedRuleAge is how long a rule may go unused before the UnusedRules
	// condition names it.
	UnusedRuleAge time.Duration `mapstructure:"unused_rule_age"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:           enforcerextension.DefaultReference(),
		StatusSyncInterval: 30 * time.Second,
		MaxBuffered:        10000,
		Observe:            true,
		ObservedInterval:   time.Minute,
		MaxObserved:        32,
		MaxTrackedEdges:    1024,
		UnusedRuleAge:      7 * 24 * time.Hour,
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
	if c.StatusSyncInterval < minStatusSyncInterval {
		errs = append(errs, fmt.Errorf("invalid status_sync_interval %s: must be at least %s", c.StatusSyncInterval, minStatusSyncInterval))
	}
	if c.MaxBuffered < 1 {
		errs = append(errs, fmt.Errorf("invalid max_buffered %d: must be at least 1", c.MaxBuffered))
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
	if c.UnusedRuleAge < time.Minute {
		errs = append(errs, fmt.Errorf("invalid unused_rule_age %s: must be at least 1m", c.UnusedRuleAge))
	}
	return errors.Join(errs...)
}
