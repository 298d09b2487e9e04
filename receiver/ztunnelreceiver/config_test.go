package ztunnelreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	grpcOnly := createDefaultConfig().(*Config)
	grpcOnly.Protocols.GRPC = configoptional.Some(*grpcOnly.Protocols.GRPC.GetOrInsertDefault())

	custom := createDefaultConfig().(*Config)
	grpc := *custom.Protocols.GRPC.GetOrInsertDefault()
	grpc.NetAddr.Endpoint = "0.0.0.0:14317"
	custom.Protocols.GRPC = configoptional.Some(grpc)
	http := *custom.Protocols.HTTP.GetOrInsertDefault()
	http.NetAddr.Endpoint = "0.0.0.0:14318"
	custom.Protocols.HTTP = configoptional.Some(http)
	custom.TrustDomain = "mesh.example.com"
	custom.JoinWindow = 2 * time.Second
	custom.JoinMaxHeld = 5000

	agent := createDefaultConfig().(*Config)
	file := *agent.File.GetOrInsertDefault()
	file.StartAt = "beginning"
	storage := component.MustNewIDWithName("file_storage", "ztunnel")
	file.Storage = &storage
	agent.File = configoptional.Some(file)

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: grpcOnly},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: custom},
		{ID: component.NewIDWithName(metadata.Type, "agent"), Want: agent},
		{ID: component.NewIDWithName(metadata.Type, "none"), WantErr: []string{
			"no input: configure at least one of protocols::grpc, protocols::http, file",
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad"), WantErr: []string{
			"file::include must name at least one glob",
			`invalid file::start_at "middle": must be one of beginning, end`,
			`invalid trust_domain "Not A Domain"`,
			"invalid join_window 0s: must be positive",
			"invalid join_max_held 0: must be at least 1",
		}},
	})
}

func TestDefaultConfigHasNoInput(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	if cfg.Protocols.GRPC.HasValue() || cfg.Protocols.HTTP.HasValue() || cfg.File.HasValue() {
		t.Fatal("an input is on by default; each must be configured")
	}
	if got := cfg.File.GetOrInsertDefault().Include; len(got) != 1 || got[0] != DefaultInclude {
		t.Fatalf("default include %v", got)
	}
}
