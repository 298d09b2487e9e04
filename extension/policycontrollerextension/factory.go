// Package policycontrollerextension is the policy controller extension: the
// controllers that act on what a person decided, and consume no telemetry. The
// promotion controller turns a proposal labelled for promotion into a
// WorkloadNetworkPolicy, and merges a labelled amendment into its policy; the
// revision recorder keeps each policy's spec as numbered revisions and rolls
// a policy back on request; the render controller keeps each policy rendered
// as the native object of its backend (internal/render). They run while this
// replica leads, on the terms of the leader elector, and read and watch
// through the enforcer extension's shared cache.
package policycontrollerextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension/internal/metadata"
)

// NewFactory returns the factory of the policy controller extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newPolicyController(set, cfg.(*Config)), nil
}
