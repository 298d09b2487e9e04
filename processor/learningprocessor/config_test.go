package learningprocessor

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "named"), Want: &Config{Enforcer: component.MustNewIDWithName("enforcer", "primary"),
			OutsidePeers: OutsidePeersDrop, CiliumBackend: v1alpha1.BackendKubernetes, IPv4Prefix: 32, IPv6Prefix: 128, Observe: true}},
		{ID: component.NewIDWithName(metadata.Type, "unobserved"), Want: &Config{Enforcer: enforcerextension.DefaultReference(),
			OutsidePeers: OutsidePeersDrop, CiliumBackend: v1alpha1.BackendKubernetes, IPv4Prefix: 32, IPv6Prefix: 128}},
		{ID: component.NewIDWithName(metadata.Type, "bad_enforcer"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "ip_blocks"), Want: &Config{Enforcer: enforcerextension.DefaultReference(),
			OutsidePeers: OutsidePeersIPBlocks, CiliumBackend: v1alpha1.BackendKubernetes, IPv4Prefix: 24, IPv6Prefix: 64, Observe: true}},
		{ID: component.NewIDWithName(metadata.Type, "entities"), Want: &Config{Enforcer: enforcerextension.DefaultReference(),
			OutsidePeers: OutsidePeersEntities, CiliumBackend: v1alpha1.BackendCilium, IPv4Prefix: 32, IPv6Prefix: 128, Observe: true}},
		{ID: component.NewIDWithName(metadata.Type, "bad_outside"), WantErr: []string{
			`invalid outside_peers "x": must be one of drop, ip_blocks, entities`,
			`invalid cilium_backend "istio": must be one of kubernetes, cilium`,
			"invalid ipv4_prefix 33: must be between 8 and 32",
			"invalid ipv6_prefix 16: must be between 32 and 128",
		}},
	})
}
