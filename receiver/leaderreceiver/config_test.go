package leaderreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/receiver/leaderreceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	mtls := configtls.NewDefaultServerConfig()
	mtls.CertFile, mtls.KeyFile, mtls.ClientCAFile = "tls.crt", "tls.key", "ca.crt"

	minimal := createDefaultConfig().(*Config)
	minimal.TLS = configoptional.Some(mtls)

	custom := createDefaultConfig().(*Config)
	custom.NetAddr.Endpoint = "0.0.0.0:14320"
	custom.LeaderElector = component.MustNewIDWithName("leader_elector", "primary")
	custom.Enforcer = component.MustNewIDWithName("enforcer", "primary")
	custom.DuplicateWindow = 10 * time.Minute
	custom.MaxRecvMsgSizeMiB = 16
	custom.TLS = configoptional.Some(mtls)

	plaintext := createDefaultConfig().(*Config)
	plaintext.Insecure = true

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), WantErr: []string{
			"mutual TLS is required: set tls::cert_file, tls::key_file and tls::client_ca_file, or insecure: true for plaintext",
		}},
		{ID: component.NewIDWithName(metadata.Type, "minimal"), Want: minimal},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: custom},
		{ID: component.NewIDWithName(metadata.Type, "plaintext"), Want: plaintext},
		{ID: component.NewIDWithName(metadata.Type, "bad"), WantErr: []string{
			"endpoint must be set, for example 0.0.0.0:4320",
			`invalid leader_elector "debug": must name an extension of type "leader_elector"`,
			`invalid enforcer "debug": must name an extension of type "enforcer"`,
			"insecure is true but tls is set: remove tls for plaintext, or set insecure: false",
			"invalid duplicate_window 0s: must be positive",
		}},
		{ID: component.NewIDWithName(metadata.Type, "halftls"), WantErr: []string{
			"mutual TLS is required: tls::cert_file, tls::key_file and tls::client_ca_file must all be set (missing: tls::client_ca_file, tls::key_file), or insecure: true for plaintext",
		}},
	})
}
