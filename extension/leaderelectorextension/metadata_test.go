package leaderelectorextension

import (
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/metadatatest"
)

// TestMetadata: metadata.yaml, the code and the README say the same. The
// elector registers its meters when it starts, so it starts here on the test
// control plane.
func TestMetadata(t *testing.T) {
	controlplanetest.Require(t)
	metadatatest.Check(t, metadatatest.Component{
		Factory: NewFactory(), Type: metadata.Type, ScopeName: metadata.ScopeName,
		Published: []string{MetricTerms, MetricLeaderObserved},
		Create: func(t *testing.T, tel component.TelemetrySettings) {
			startElectorWith(t, testConfig("metadata"), tel)
		},
	})
}
