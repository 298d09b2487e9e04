package policycontrollerextension

import (
	"testing"

	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/metadatatest"
)

// TestMetadata: metadata.yaml, the code and the README say the same.
func TestMetadata(t *testing.T) {
	metadatatest.Check(t, metadatatest.Component{Factory: NewFactory(), Type: metadata.Type, ScopeName: metadata.ScopeName})
}
