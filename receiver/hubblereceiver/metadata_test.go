package hubblereceiver

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver"

	"github.com/kubewarden/network-enforcer/internal/metadatatest"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// TestMetadata: metadata.yaml, the code and the README say the same. The
// default configuration sets no mode, which the collector refuses; the
// receiver is created in relay mode, with every meter of both modes.
func TestMetadata(t *testing.T) {
	metadatatest.Check(t, metadatatest.Component{
		Factory: NewFactory(), Type: metadata.Type, ScopeName: metadata.ScopeName,
		Create: func(t *testing.T, tel component.TelemetrySettings) {
			cfg := createDefaultConfig().(*Config)
			cfg.Relay.GetOrInsertDefault()
			set := receiver.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: tel, BuildInfo: component.NewDefaultBuildInfo()}
			if _, err := NewFactory().CreateLogs(context.Background(), set, cfg, consumertest.NewNop()); err != nil {
				t.Fatal(err)
			}
		},
	})
}
