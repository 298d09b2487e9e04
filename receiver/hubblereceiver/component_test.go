package hubblereceiver

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kubewarden/network-enforcer/internal/componentcheck"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, componentcheck.LeakOptions()...)
}

// TestComponent runs the standard tests of a component (componentcheck).
func TestComponent(t *testing.T) {
	// The default configuration sets neither mode, which the collector
	// refuses: the minimal valid one sets relay mode, with its defaults.
	cfg := createDefaultConfig().(*Config)
	cfg.Relay.GetOrInsertDefault()
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(), Config: cfg})
}
