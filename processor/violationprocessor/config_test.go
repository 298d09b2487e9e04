package violationprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "named"), Want: &Config{
			Enforcer:           component.MustNewIDWithName("enforcer", "primary"),
			LeaderElector:      component.MustNewIDWithName("leader_elector", "primary"),
			StatusSyncInterval: 5 * time.Second,
			MaxBuffered:        500,
			Config:             observed.Config{ObservedInterval: 2 * time.Minute, MaxObserved: 10, MaxTrackedEdges: 100},
			UnusedRuleAge:      24 * time.Hour,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
			`invalid leader_elector "health_check": must name an extension of type "leader_elector"`,
			"invalid status_sync_interval 10ms: must be at least 1s",
			"invalid max_buffered 0: must be at least 1",
			"invalid observed_interval 0s: must be at least 1s",
			"invalid max_observed 0: must be between 1 and 256",
			"invalid unused_rule_age 1s: must be at least 1m",
		}},
	})
}
