// Package reviewextension is the review extension: a read-only web page, served
// by every replica from the enforcer extension's shared cache, that shows the
// learned and enforced graph of workloads, each proposal's and policy's
// evidence, and the kubectl commands that promote, switch mode or acknowledge.
// The same graph is served as DOT and Mermaid text. Bound to an address other
// than loopback, it requires a Kubernetes bearer token, checked with a
// TokenReview and a SubjectAccessReview.
package reviewextension

import (
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"

	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/kubewarden/network-enforcer/extension/reviewextension/internal/metadata"
)

// NewFactory returns the factory of the review extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newServer(set, cfg.(*Config), k8sconfig.RestConfig), nil
}
