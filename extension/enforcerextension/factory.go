// Package enforcerextension is the enforcer extension: leader election, the shared
// Kubernetes cache and workload resolution, read by every replica; and the
// writers, each a controller that runs on each term of leadership with a narrow
// client: its own promotion and render controllers, and those that the proposal
// writer and the violation status owner register. The other Network Enforcer
// components reach it through host.GetExtensions().
package enforcerextension

import (
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"

	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
)

// NewFactory returns the factory of the enforcer extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newEnforcer(set, cfg.(*Config), k8sconfig.RestConfig), nil
}
