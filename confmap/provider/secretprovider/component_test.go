package secretprovider

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/componentcheck"
)

// TestComponent runs the standard tests of a confmap provider (componentcheck).
func TestComponent(t *testing.T) {
	componentcheck.CheckProvider(t, NewFactory())
}
