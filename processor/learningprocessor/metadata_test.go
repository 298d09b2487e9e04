package learningprocessor

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/metadatatest"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

// TestMetadata: metadata.yaml, the code and the README say the same.
func TestMetadata(t *testing.T) {
	metadatatest.Check(t, metadatatest.Component{Factory: NewFactory(), Type: metadata.Type, ScopeName: metadata.ScopeName,
		Published: []string{MetricEdges, MetricCandidates, MetricDropped, MetricCoverageGaps}})
}
