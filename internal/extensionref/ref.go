// Package extensionref is how a component finds an extension that its config
// names by id (an `enforcer` or a `leader_elector` key), as contrib's
// receivers find k8s_leader_elector: one check of the id's type when the
// config is validated, one lookup in the host's extensions at Start.
package extensionref

import (
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Validate checks that id, the value of the config key key, names an
// extension of type typ, such as "enforcer" or "enforcer/primary".
func Validate(key string, typ component.Type, id component.ID) error {
	if id.Type() != typ {
		return fmt.Errorf("invalid %s %q: must name an extension of type %q", key, id, typ)
	}
	return nil
}

// Find returns extension id from the host's extensions as T, the interfaces
// that the calling component uses; kind names the extension in errors.
func Find[T any](host component.Host, id component.ID, kind string) (T, error) {
	var none T
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return none, fmt.Errorf("extension %q is not configured: add it to service::extensions", id)
	}
	e, ok := ext.(T)
	if !ok {
		return none, fmt.Errorf("extension %q is not %s", id, kind)
	}
	return e, nil
}

// FindOptional is Find for a key that may be unset: a nil id finds nothing
// and is no error.
func FindOptional[T any](host component.Host, id *component.ID, kind string) (T, error) {
	if id == nil {
		var none T
		return none, nil
	}
	return Find[T](host, *id, kind)
}
