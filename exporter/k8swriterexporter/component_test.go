package k8swriterexporter

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
	// elector) to start: it starts on a host with their fake. NewFactory's
	// finder wants the real enforcer, whose controller manager runs the
	// writer's controller; the factory of its test seam finds the fake, which
	// runs it in memory. Both create the component from the same default
	// configuration.
	componentcheck.Check(t, componentcheck.Component{Factory: newFactory(enforcerextensiontest.FindWriting),
		Host: enforcerextensiontest.New().Host(enforcerextension.DefaultReference())})
}
