package leaderreceiver

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, componentcheck.LeakOptions()...)
}

// TestComponent runs the standard tests of a component (componentcheck).
func TestComponent(t *testing.T) {
	// The component needs the enforcer extension (and, through it, the leader
	// elector) to start: it starts on a host with their fake.
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(),
		Host: enforcerextensiontest.New().Host(enforcerextension.DefaultReference())})
}
