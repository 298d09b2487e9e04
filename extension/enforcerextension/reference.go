package enforcerextension

import (
	"fmt"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
)

// DefaultReference is the ID by which the other Network Enforcer components name
// the enforcer extension by default (their `enforcer` config key): the unnamed one.
func DefaultReference() component.ID {
	return component.NewID(metadata.Type)
}

// ValidateReference checks the `enforcer` config key of another component: it must
// name an extension of the enforcer type, such as "enforcer" or "enforcer/primary".
func ValidateReference(id component.ID) error {
	if id.Type() != metadata.Type {
		return fmt.Errorf("invalid enforcer %q: must name an extension of type %q", id, metadata.Type)
	}
	return nil
}
