package leaderexporter

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"

	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	minimal := createDefaultConfig().(*Config)
	minimal.TLS.CertFile, minimal.TLS.KeyFile = "tls.crt", "tls.key"

	custom := createDefaultConfig().(*Config)
	custom.Enforcer = component.MustNewIDWithName("enforcer", "primary")
	custom.Port = 14320
	custom.TLS.CAFile, custom.TLS.CertFile, custom.TLS.KeyFile = "ca.crt", "tls.crt", "tls.key"
	custom.TLS.ServerName = "network-enforcer-leader.network-enforcer.svc"
	custom.Compression = configcompression.TypeGzip
	custom.Aggregation = AggregationConfig{Interval: 5 * time.Second, MaxEdges: 500}
	custom.ResendWindow = 20 * time.Minute
	custom.TimeoutConfig.Timeout = 10 * time.Second
	custom.RetryConfig.InitialInterval, custom.RetryConfig.MaxInterval, custom.RetryConfig.MaxElapsedTime = 100*time.Millisecond, 5*time.Second, time.Minute
	custom.QueueConfig.Get().QueueSize = 100

	plaintext := createDefaultConfig().(*Config)
	plaintext.TLS.Insecure = true

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), WantErr: []string{
			"mutual TLS is required by the leader receiver: tls::cert_file and tls::key_file must be set, or tls::insecure: true for plaintext",
		}},
		{ID: component.NewIDWithName(metadata.Type, "minimal"), Want: minimal},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: custom},
		{ID: component.NewIDWithName(metadata.Type, "plaintext"), Want: plaintext},
		{ID: component.NewIDWithName(metadata.Type, "bad"), WantErr: []string{
			`invalid enforcer "debug": must name an extension of type "enforcer"`,
			"invalid port 0: must be between 1 and 65535",
			`endpoint "10.0.0.7:4320" must not be set: the leader's address comes from the enforcer extension; set port`,
			"tls::insecure is true but a CA, certificate or key is set: remove them for plaintext, or set tls::insecure: false",
			"invalid aggregation::interval 0s: must be positive",
			"invalid aggregation::max_edges 0: must be at least 1",
			"invalid resend_window -1s: must not be negative",
			"invalid sending_queue::num_consumers 4: must be 1, so that the leader takes each reader's batches in order",
			"invalid sending_queue::batch: must not be set: the exporter merges learned edges itself (aggregation), and keeps each batch of them apart from the violation candidates",
		}},
		{ID: component.NewIDWithName(metadata.Type, "halftls"), WantErr: []string{
			"invalid port 65536: must be between 1 and 65535",
			"mutual TLS is required by the leader receiver",
		}},
	})
}
