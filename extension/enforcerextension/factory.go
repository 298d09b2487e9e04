// Package enforcerextension is the enforcer extension: leader election, the shared
// Kubernetes cache, and the reconcilers that promote proposals and render policies.
// The other Network Enforcer components reach it through host.GetExtensions().
package enforcerextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
)

// Type is the component type of the enforcer extension.
var Type = component.MustNewType("enforcer")

// Stability is the stability level of the enforcer extension.
const Stability = component.StabilityLevelDevelopment

// NewFactory returns the factory of the enforcer extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type, createDefaultConfig, createExtension, Stability)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newEnforcer(set, cfg.(*Config), restConfig), nil
}
