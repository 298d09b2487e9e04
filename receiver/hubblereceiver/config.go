package hubblereceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/reconnect"
)

// Config is the configuration of the hubble receiver.
type Config struct {
	// ClientConfig is the gRPC client to Hubble Relay: endpoint, tls and the
	// other configgrpc client settings. TLS is on unless tls::insecure is true.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// Backfill asks Hubble Relay, on start, for the flows in its buffer.
	Backfill BackfillConfig `mapstructure:"backfill"`

	// FieldMask asks Hubble for only the flow fields that the receiver reads
	// (GetFlowsRequest.field_mask): the relay and every agent then encode,
	// send and decrypt a fraction of each flow. Off, Hubble sends whole flows.
	FieldMask bool `mapstructure:"field_mask"`

	// Reconnect is the backoff between attempts to re-open a broken stream.
	Reconnect reconnect.Config `mapstructure:"reconnect"`

	// Batch groups the records handed to the pipeline: up to max_size records,
	// none waiting longer than timeout.
	Batch flowsource.BatchConfig `mapstructure:"batch"`

	// Enforcer, when set, names the enforcer extension whose leadership gates the
	// stream: only the leader replica reads flows, and each new term starts with
	// the backfill. Unset, the receiver streams from start to shutdown.
	Enforcer *component.ID `mapstructure:"enforcer"`

	_ struct{}
}

// BackfillConfig selects the buffered flows read on start.
type BackfillConfig struct {
	// Enabled turns backfill on.
	Enabled bool `mapstructure:"enabled"`
	// Since reads the buffered flows of this last period.
	Since time.Duration `mapstructure:"since"`
	// Number, when not zero, reads at most this many of the newest buffered flows.
	Number uint64 `mapstructure:"number"`
}

func createDefaultConfig() component.Config {
	return &Config{
		ClientConfig: flowsource.NewClientConfig("hubble-relay.kube-system.svc:443"),
		Backfill:     BackfillConfig{Enabled: true, Since: 5 * time.Minute},
		FieldMask:    true,
		Reconnect:    reconnect.NewDefaultConfig(),
		Batch:        flowsource.NewDefaultBatchConfig(),
	}
}

// Validate checks the configuration. TLS is the default; plaintext needs an
// explicit tls::insecure: true, and then no certificate may be configured, so that
// a half-written TLS setup fails here rather than silently going plaintext.
func (c *Config) Validate() error {
	var errs []error
	if c.Enforcer != nil {
		if err := enforcerextension.ValidateReference(*c.Enforcer); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set to the Hubble Relay address, for example hubble-relay.kube-system.svc:443"))
	}
	tls := c.TLS
	if tls.Insecure {
		if tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "" || tls.CAPem != "" || tls.CertPem != "" || tls.KeyPem != "" {
			errs = append(errs, errors.New("tls::insecure is true but a CA, certificate or key is set: remove them for plaintext, or set tls::insecure: false"))
		}
	} else if (tls.CertFile == "" && tls.CertPem == "") != (tls.KeyFile == "" && tls.KeyPem == "") {
		errs = append(errs, errors.New("tls::cert_file and tls::key_file must be set together"))
	}
	if c.Backfill.Since < 0 {
		errs = append(errs, fmt.Errorf("invalid backfill::since %s: must not be negative", c.Backfill.Since))
	}
	errs = append(errs, c.Batch.Check("batch")...)
	return errors.Join(errs...)
}
