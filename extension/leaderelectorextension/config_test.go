package leaderelectorextension

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: &Config{
			APIConfig: k8sconfig.APIConfig{AuthType: k8sconfig.AuthTypeKubeConfig},
			LeaseName: "enforcer-a", LeaseNamespace: "network-enforcer",
			LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 5 * time.Second,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_auth"), WantErr: []string{
			`invalid auth_type "token": must be one of serviceAccount, kubeConfig`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_lease_name"), WantErr: []string{
			`invalid lease_name "Not_A_Name"`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_durations"), WantErr: []string{
			"invalid renew_deadline 10s: must be greater than retry_period (10s)",
			"invalid lease_duration 10s: must be greater than renew_deadline (10s)",
		}},
	})
}

func TestValidateReference(t *testing.T) {
	if err := ValidateReference(DefaultReference()); err != nil {
		t.Fatalf("default reference: %v", err)
	}
	err := ValidateReference(component.MustNewIDWithName("health_check", "x"))
	if err == nil || !strings.Contains(err.Error(), `invalid leader_elector "health_check/x": must name an extension of type "leader_elector"`) {
		t.Fatalf("error %v", err)
	}
}
