package policydeniesconnector

import (
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Config is the configuration of the policy denies connector.
type Config struct {
	// MaxSeries bounds the number of distinct label sets the connector counts.
	// An observation that would start a series beyond it is not counted in
	// network_enforcer_policy_denies but in network_enforcer_policy_denies_dropped.
	MaxSeries int `mapstructure:"max_series"`

	_ struct{}
}

// defaultMaxSeries is the default of max_series.
const defaultMaxSeries = 10000

func createDefaultConfig() component.Config {
	return &Config{MaxSeries: defaultMaxSeries}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.MaxSeries <= 0 {
		return fmt.Errorf("invalid max_series %d: must be positive", c.MaxSeries)
	}
	return nil
}
