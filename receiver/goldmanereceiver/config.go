package goldmanereceiver

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Config is the configuration of the goldmane receiver.
type Config struct {
	// ClientConfig is the gRPC client to Goldmane: endpoint, tls and the other
	// configgrpc client settings. Goldmane requires mutual TLS.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// StartTimeGte is Goldmane's start_time_gte, in seconds. A negative value reads
	// the flows of the last that-many seconds of Goldmane's history on start
	// (backfill); 0 reads only new flows.
	StartTimeGte int64 `mapstructure:"start_time_gte"`

	// Reconnect is the backoff between attempts to re-open a broken stream.
	Reconnect flowsource.ReconnectConfig `mapstructure:"reconnect"`

	// Batch groups the records handed to the pipeline: up to max_size records,
	// none waiting longer than timeout.
	Batch flowsource.BatchConfig `mapstructure:"batch"`

	// LeaderElector, when set, names the leader elector whose terms gate the
	// stream: only the leader replica reads flows, and each new term starts
	// with the backfill. Unset, the receiver streams from start to shutdown.
	LeaderElector *component.ID `mapstructure:"leader_elector"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		ClientConfig: flowsource.NewClientConfig("goldmane.calico-system.svc:7443"),
		StartTimeGte: -300,
		Reconnect:    flowsource.NewDefaultReconnectConfig(),
		Batch:        flowsource.NewDefaultBatchConfig(),
	}
}

// Validate checks the configuration. Goldmane accepts mutual TLS only, so the CA,
// the client certificate and its key are all required and plaintext is refused.
func (c *Config) Validate() error {
	var errs []error
	if c.LeaderElector != nil {
		if err := leaderelectorextension.ValidateReference(*c.LeaderElector); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set to the Goldmane address, for example goldmane.calico-system.svc:7443"))
	}
	tls := c.TLS
	if tls.Insecure {
		errs = append(errs, errors.New("tls::insecure is not allowed: Goldmane requires mutual TLS and there is no plaintext option"))
	}
	if tls.InsecureSkipVerify {
		errs = append(errs, errors.New("tls::insecure_skip_verify is not allowed: Goldmane's certificate must be verified against tls::ca_file"))
	}
	var missing []string
	for key, set := range map[string]bool{
		"tls::ca_file":   tls.CAFile != "" || tls.CAPem != "",
		"tls::cert_file": tls.CertFile != "" || tls.CertPem != "",
		"tls::key_file":  tls.KeyFile != "" || tls.KeyPem != "",
	} {
		if !set {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		errs = append(errs, fmt.Errorf("mutual TLS is required by Goldmane: tls::ca_file, tls::cert_file and tls::key_file must all be set (missing: %s)", strings.Join(missing, ", ")))
	}
	errs = append(errs, c.Batch.Check("batch")...)
	return errors.Join(errs...)
}
