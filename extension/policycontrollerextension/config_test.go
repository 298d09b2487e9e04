package policycontrollerextension

import (
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: &Config{
			Enforcer:      component.MustNewIDWithName("enforcer", "primary"),
			LeaderElector: component.MustNewIDWithName("leader_elector", "primary"),

			RevisionHistoryLimit: 3,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_references"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
			`invalid leader_elector "health_check": must name an extension of type "leader_elector"`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_revisions"), WantErr: []string{
			"revision_history_limit must be at least 1, got 0",
		}},
	})
}

func TestValidateReference(t *testing.T) {
	if err := ValidateReference(DefaultReference()); err != nil {
		t.Fatalf("default reference: %v", err)
	}
	err := ValidateReference(component.MustNewIDWithName("health_check", "x"))
	if err == nil || !strings.Contains(err.Error(), `invalid policy_controller "health_check/x": must name an extension of type "policy_controller"`) {
		t.Fatalf("error %v", err)
	}
}
