package policycontrollerextension

import (
	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/extensionref"
)

// DefaultReference is the ID by which the other Network Enforcer components
// name the policy controller extension by default (their `policy_controller`
// config key): the unnamed one.
func DefaultReference() component.ID {
	return component.NewID(metadata.Type)
}

// ValidateReference checks the `policy_controller` config key of another
// component: it must name an extension of the policy_controller type.
func ValidateReference(id component.ID) error {
	return extensionref.Validate("policy_controller", metadata.Type, id)
}

// Find returns the policy controller extension id from the host's extensions
// as T, the interfaces that the calling component uses.
func Find[T any](host component.Host, id component.ID) (T, error) {
	return extensionref.Find[T](host, id, "a policy controller extension")
}
