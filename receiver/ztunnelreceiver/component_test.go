package ztunnelreceiver

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
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory()})
}
