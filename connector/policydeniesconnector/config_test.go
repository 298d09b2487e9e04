package policydeniesconnector

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/connector/policydeniesconnector/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: &Config{MaxSeries: 10000}},
		{ID: component.NewIDWithName(metadata.Type, "named"), Want: &Config{MaxSeries: 500}},
		{ID: component.NewIDWithName(metadata.Type, "bad_max_series"), WantErr: []string{
			"invalid max_series 0: must be positive",
		}},
	})
}

func TestValidateNegativeMaxSeries(t *testing.T) {
	err := (&Config{MaxSeries: -1}).Validate()
	if err == nil || err.Error() != "invalid max_series -1: must be positive" {
		t.Fatalf("Validate() = %v", err)
	}
}
