package goldmanereceiver

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	mtls := createDefaultConfig().(*Config)
	mtls.TLS.CAFile = "/etc/goldmane/ca.crt"
	mtls.TLS.CertFile = "/etc/goldmane/tls.crt"
	mtls.TLS.KeyFile = "/etc/goldmane/tls.key"
	mtls.StartTimeGte = -600

	batch := createDefaultConfig().(*Config)
	batch.TLS = mtls.TLS
	batch.Batch = flowsource.BatchConfig{MaxSize: 1, Timeout: time.Second}

	leader := createDefaultConfig().(*Config)
	primary := component.MustNewIDWithName("leader_elector", "primary")
	leader.LeaderElector = &primary

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewIDWithName(metadata.Type, "mtls"), Want: mtls},
		{ID: component.NewIDWithName(metadata.Type, "batch"), Want: batch},
		{ID: component.NewIDWithName(metadata.Type, "bad_batch"), WantErr: []string{
			"invalid batch::max_size -5: must be at least 1",
			"invalid batch::timeout 2s: must be positive and at most 1s",
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_tls"), WantErr: []string{
			"mutual TLS is required by Goldmane: tls::ca_file, tls::cert_file and tls::key_file must all be set (missing: tls::ca_file, tls::cert_file, tls::key_file)",
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_key"), WantErr: []string{"(missing: tls::key_file)"}},
		{ID: component.NewIDWithName(metadata.Type, "plaintext"), WantErr: []string{
			"tls::insecure is not allowed: Goldmane requires mutual TLS and there is no plaintext option",
			"tls::insecure_skip_verify is not allowed",
		}},
	})
}

// The defaults alone are not a valid config: there is no certificate to default to.
func TestDefaultConfigNeedsCertificates(t *testing.T) {
	err := confmap.Validate(createDefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "mutual TLS is required by Goldmane") {
		t.Fatalf("default config: %v", err)
	}
}
