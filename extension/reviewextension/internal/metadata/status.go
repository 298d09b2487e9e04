// Package metadata defines the review extension's component type and its
// stability in one place, as the collector's mdatagen writes them from
// metadata.yaml; the extension has no meters of its own. metadata.yaml and the
// README say the same: the component's TestMetadata checks that they agree.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

// Type is the component type; ScopeName the instrumentation scope of its meters.
var (
	Type      = component.MustNewType("review")
	ScopeName = "github.com/kubewarden/network-enforcer/extension/reviewextension"
)

// The stability of each signal.
const (
	ExtensionStability = component.StabilityLevelDevelopment
)
