package reviewextension

import (
	"testing"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
)

// TestComponent runs the standard tests of a component (componentcheck).
// The extension needs the enforcer extension (and the leader elector): it
// starts on a host with their fake.
func TestComponent(t *testing.T) {
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(),
		Host: enforcerextensiontest.New().Host(enforcerextension.DefaultReference())})
}
