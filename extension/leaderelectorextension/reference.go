package leaderelectorextension

import (
	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/extensionref"
)

// DefaultReference is the ID by which the other components name the leader
// elector by default (their `leader_elector` config key): the unnamed one.
func DefaultReference() component.ID {
	return component.NewID(metadata.Type)
}

// ValidateReference checks the `leader_elector` config key of another
// component: it must name an extension of the leader_elector type, such as
// "leader_elector" or "leader_elector/primary".
func ValidateReference(id component.ID) error {
	return extensionref.Validate("leader_elector", metadata.Type, id)
}

// Find returns the leader elector id from the host's extensions as T, the
// interfaces that the calling component uses.
func Find[T any](host component.Host, id component.ID) (T, error) {
	return extensionref.Find[T](host, id, "a leader elector")
}

// FindOptional is Find for a component whose `leader_elector` key may be
// unset: nil id finds nothing and is no error.
func FindOptional[T any](host component.Host, id *component.ID) (T, error) {
	return extensionref.FindOptional[T](host, id, "a leader elector")
}
