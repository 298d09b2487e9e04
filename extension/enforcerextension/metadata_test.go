package enforcerextension

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/metadatatest"
)

// TestMetadata: metadata.yaml, the code and the README say the same. The
// extension registers its meters when it starts, so it starts here on the test
// control plane.
func TestMetadata(t *testing.T) {
	controlplanetest.Require(t)
	metadatatest.Check(t, metadatatest.Component{
		Factory: NewFactory(), Type: metadata.Type, ScopeName: metadata.ScopeName,
		Published: []string{MetricReconciles, MetricMembers},
		Create: func(t *testing.T, tel component.TelemetrySettings) {
			rc := func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil }
			elector := startElector(t, "metadata", leaderelectorextension.ReplicaName(), rc, tel.Logger)
			set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: tel, BuildInfo: component.NewDefaultBuildInfo()}
			e := newEnforcer(set, createDefaultConfig().(*Config), rc)
			if err := e.Start(context.Background(), electorHost{leaderelectorextension.DefaultReference(): elector}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
			ready(t, elector)
		},
	})
}
