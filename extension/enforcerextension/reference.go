package enforcerextension

import (
	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/extensionref"
)

// DefaultReference is the ID by which the other Network Enforcer components name
// the enforcer extension by default (their `enforcer` config key): the unnamed one.
func DefaultReference() component.ID {
	return component.NewID(metadata.Type)
}

// ValidateReference checks the `enforcer` config key of another component: it must
// name an extension of the enforcer type, such as "enforcer" or "enforcer/primary".
func ValidateReference(id component.ID) error {
	return extensionref.Validate("enforcer", metadata.Type, id)
}

// Find returns the enforcer extension id from the host's extensions as T, the
// interfaces that the calling component uses.
func Find[T any](host component.Host, id component.ID) (T, error) {
	return extensionref.Find[T](host, id, "an enforcer extension")
}

// FindOptional is Find for a component whose `enforcer` key may be unset: nil
// id finds nothing and is no error.
func FindOptional[T any](host component.Host, id *component.ID) (T, error) {
	return extensionref.FindOptional[T](host, id, "an enforcer extension")
}
