// Package metadata defines the policy controller extension's component type
// and its stability in one place, as the collector's mdatagen writes them from
// metadata.yaml; its controllers count their reconciles in the enforcer
// extension's metric. metadata.yaml and the README say the same: the
// component's TestMetadata checks that they agree.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

// Type is the component type; ScopeName the instrumentation scope of its meters.
var (
	Type      = component.MustNewType("policy_controller")
	ScopeName = "github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
)

// The stability of each signal.
const (
	ExtensionStability = component.StabilityLevelDevelopment
)
