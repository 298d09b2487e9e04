package policycontrollerextension

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// Config is the configuration of the policy controller extension.
type Config struct {
	// Enforcer names the enforcer extension whose shared cache and API
	// client the controllers use.
	Enforcer component.ID `mapstructure:"enforcer"`

	// LeaderElector names the leader elector whose terms run the
	// controllers.
	LeaderElector component.ID `mapstructure:"leader_elector"`

	// RevisionHistoryLimit is how many revisions of each policy are kept,
	// its current one included: the oldest beyond it are deleted. A rollback
	// can go back to the revisions kept.
	RevisionHistoryLimit int `mapstructure:"revision_history_limit"`

	_ struct{}
}

// defaultRevisionHistoryLimit is the revisions kept of each policy by
// default, as many as a Deployment keeps of its ReplicaSets.
const defaultRevisionHistoryLimit = 10

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:      enforcerextension.DefaultReference(),
		LeaderElector: leaderelectorextension.DefaultReference(),

		RevisionHistoryLimit: defaultRevisionHistoryLimit,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	errs := []error{enforcerextension.ValidateReference(c.Enforcer), leaderelectorextension.ValidateReference(c.LeaderElector)}
	if c.RevisionHistoryLimit < 1 {
		// The newest revision is what the recorder compares a policy's spec
		// with: it is always kept.
		errs = append(errs, fmt.Errorf("revision_history_limit must be at least 1, got %d", c.RevisionHistoryLimit))
	}
	return errors.Join(errs...)
}
