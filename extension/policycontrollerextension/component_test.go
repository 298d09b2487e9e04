package policycontrollerextension

import (
	"testing"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestComponent runs the standard tests of a component (componentcheck).
// The extension needs the real enforcer extension (its controller manager
// runs the policy controller's controllers) and the leader elector: it
// starts on a host with both, on the test control plane.
func TestComponent(t *testing.T) {
	controlplanetest.Require(t)
	r := enforcerextensiontest.StartReplica(t, env.Config, "component", leaderelectorextension.ReplicaName())
	componentcheck.Check(t, componentcheck.Component{Factory: NewFactory(), Host: r.Host})
}
