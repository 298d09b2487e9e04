package k8swriterexporter

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: &Config{
			Enforcer:      component.MustNewIDWithName("enforcer", "primary"),
			LeaderElector: component.MustNewIDWithName("leader_elector", "primary"),
			WriteQPS:      20,
			WriteBurst:    40,

			MaxPortsPerPeer: 8,
			MaxPeers:        16,
			StableAfter:     10 * time.Minute,

			Config: observed.Config{ObservedInterval: 30 * time.Second, MaxObserved: 100, MaxTrackedEdges: 5000},
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad"), WantErr: []string{
			`invalid enforcer "debug": must name an extension of type "enforcer"`,
			`invalid leader_elector "debug": must name an extension of type "leader_elector"`,
			"invalid write_qps 0: must be positive",
			"invalid write_burst 0: must be at least 1",
			"invalid max_ports_per_peer 0: must be at least 1",
			"invalid max_peers -1: must be at least 1",
			"invalid stable_after 0s: must be positive",
			"invalid observed_interval 10ms: must be at least 1s",
			"invalid max_observed 300: must be between 1 and 256",
			"invalid max_tracked_edges 10: must be at least max_observed (300)",
		}},
	})
}
