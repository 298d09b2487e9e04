package enforcerextension

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

// enforcer is the extension. Leader election and the shared cache arrive with the
// learning work; until then it holds its configuration and does nothing at start.
type enforcer struct {
	component.StartFunc
	component.ShutdownFunc

	cfg *Config
	set extension.Settings
}

func newEnforcer(set extension.Settings, cfg *Config) *enforcer {
	return &enforcer{cfg: cfg, set: set}
}
