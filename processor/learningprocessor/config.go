package learningprocessor

import (
	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// Config is the configuration of the learning processor.
type Config struct {
	// Enforcer names the enforcer extension whose Kubernetes cache resolves pods
	// and policies.
	Enforcer component.ID `mapstructure:"enforcer"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{Enforcer: enforcerextension.DefaultReference()}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	return enforcerextension.ValidateReference(c.Enforcer)
}
