package learningprocessor

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(Type, "named"), Want: &Config{Enforcer: component.MustNewIDWithName("enforcer", "primary")}},
		{ID: component.NewIDWithName(Type, "bad_enforcer"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
		}},
	})
}
