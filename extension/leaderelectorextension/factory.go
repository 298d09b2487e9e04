// Package leaderelectorextension is the leader elector: leader election on a
// coordination.k8s.io Lease, in the shape of contrib's k8s_leader_elector
// (callbacks on the start and the stop of leading; the other components name
// it by id with their `leader_elector` key), and the hand-off of the flow
// stream that a leader's graceful release carries to the next leader.
package leaderelectorextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// NewFactory returns the factory of the leader elector.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newElector(set, cfg.(*Config), k8sconfig.RestConfig, ReplicaName()), nil
}

// NewReplica returns the extension as the replica whose pod has that name,
// reaching the API server as rc says: the seam for tests that run several
// replicas in one process against a test control plane.
func NewReplica(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error), replica string) extension.Extension {
	return newElector(set, cfg, rc, replica)
}
