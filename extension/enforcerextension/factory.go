// Package enforcerextension is the enforcer extension: the shared Kubernetes
// cache and API client and workload resolution, read by every replica, and
// the host of the replicas' membership (internal/membership), which it starts
// with the leader elector's Lease settings, identity and holder and its cached
// pods. It writes nothing but its membership Lease. The other
// Network Enforcer components reach it through host.GetExtensions(), and the
// controllers that write run on its cache and client (Cluster): the writers'
// (the proposal writer's and the violation status owner's), which
// internal/termwriter runs on each term of the leader elector with a narrow
// client, and the policy controller extension's promotion and render.
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
