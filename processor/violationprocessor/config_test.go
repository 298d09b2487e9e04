package violationprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(Type, "named"), Want: &Config{
			Enforcer:           component.MustNewIDWithName("enforcer", "primary"),
			StatusSyncInterval: 5 * time.Second,
			MaxBuffered:        500,
		}},
		{ID: component.NewIDWithName(Type, "bad"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
			"invalid status_sync_interval 10ms: must be at least 1s",
			"invalid max_buffered 0: must be at least 1",
		}},
	})
}
