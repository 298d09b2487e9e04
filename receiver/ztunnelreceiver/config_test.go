package ztunnelreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	custom := createDefaultConfig().(*Config)
	custom.Protocols.GRPC.Get().NetAddr.Endpoint = "0.0.0.0:14317"
	http := *custom.Protocols.HTTP.GetOrInsertDefault()
	http.NetAddr.Endpoint = "0.0.0.0:14318"
	custom.Protocols.HTTP = configoptional.Some(http)
	custom.TrustDomain = "mesh.example.com"
	custom.JoinWindow = 2 * time.Second

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(Type, "custom"), Want: custom},
		{ID: component.NewIDWithName(Type, "bad"), WantErr: []string{
			`invalid trust_domain "Not A Domain"`,
			"invalid join_window 0s: must be positive",
		}},
	})
}

func TestDefaultListensOnGRPCOnly(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	if !cfg.Protocols.GRPC.HasValue() || cfg.Protocols.HTTP.HasValue() {
		t.Fatalf("default protocols: grpc %v, http %v", cfg.Protocols.GRPC.HasValue(), cfg.Protocols.HTTP.HasValue())
	}
}
