package enforcerextension

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: &Config{
			APIConfig:      k8sconfig.APIConfig{AuthType: k8sconfig.AuthTypeKubeConfig},
			LeaderElector:  component.MustNewIDWithName("leader_elector", "primary"),
			DataPlane:      netpolmatch.DataPlaneCilium,
			PodGracePeriod: 2 * time.Minute,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_auth"), WantErr: []string{
			`invalid auth_type "token": must be one of serviceAccount, kubeConfig`,
			`invalid data_plane "flannel": must be one of istio, calico, cilium`,
			`invalid pod_grace_period 0s: must be positive`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_elector"), WantErr: []string{
			`invalid leader_elector "health_check": must name an extension of type "leader_elector"`,
		}},
	})
}

func TestValidateReference(t *testing.T) {
	if err := ValidateReference(DefaultReference()); err != nil {
		t.Fatalf("default reference: %v", err)
	}
	err := ValidateReference(component.MustNewIDWithName("health_check", "x"))
	if err == nil || !strings.Contains(err.Error(), `invalid enforcer "health_check/x": must name an extension of type "enforcer"`) {
		t.Fatalf("error %v", err)
	}
}
