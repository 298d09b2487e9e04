package enforcerextension

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
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
		Published: []string{MetricReconciles, MetricTerms, MetricLeaderObserved, MetricMembers},
		Create: func(t *testing.T, tel component.TelemetrySettings) {
			cfg := createDefaultConfig().(*Config)
			cfg.LeaderElection = LeaderElectionConfig{
				LeaseName: "metadata", LeaseNamespace: "default",
				LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
			}
			set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: tel, BuildInfo: component.NewDefaultBuildInfo()}
			e := newEnforcer(set, cfg, func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil })
			if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
		},
	})
}
