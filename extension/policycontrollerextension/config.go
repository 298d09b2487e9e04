package policycontrollerextension

import (
	"errors"

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

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		Enforcer:      enforcerextension.DefaultReference(),
		LeaderElector: leaderelectorextension.DefaultReference(),
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	return errors.Join(enforcerextension.ValidateReference(c.Enforcer), leaderelectorextension.ValidateReference(c.LeaderElector))
}
