// Package metadata defines the leader elector's component type, its stability
// and its meters (telemetry.go) in one place, as the collector's mdatagen
// writes them from metadata.yaml. metadata.yaml and the README say the same:
// the component's TestMetadata checks that they agree.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

// Type is the component type; ScopeName the instrumentation scope of its meters.
var (
	Type      = component.MustNewType("leader_elector")
	ScopeName = "github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// The stability of each signal.
const (
	ExtensionStability = component.StabilityLevelDevelopment
)
