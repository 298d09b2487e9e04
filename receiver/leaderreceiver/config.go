package leaderreceiver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// DefaultEndpoint is where the receiver listens by default: the port that the
// leader exporter sends to, on every address of the pod.
const DefaultEndpoint = "0.0.0.0:4320"

// Config is the configuration of the leader receiver.
type Config struct {
	// ServerConfig is the OTLP/gRPC listener: endpoint, tls and the other
	// configgrpc server settings. Mutual TLS is required unless insecure.
	configgrpc.ServerConfig `mapstructure:",squash"`

	// Insecure listens in plaintext, without tls: it must be said, so that a
	// forgotten tls block does not open a plaintext listener.
	Insecure bool `mapstructure:"insecure"`

	// LeaderElector names the leader elector whose terms gate the listener:
	// a standby refuses with gRPC Unavailable, which the sender retries until
	// it reaches the leader.
	LeaderElector component.ID `mapstructure:"leader_elector"`

	// Enforcer names the enforcer extension whose membership is told how far
	// the leader took each node's records.
	Enforcer component.ID `mapstructure:"enforcer"`

	// DuplicateWindow is how long an accepted violation candidate is
	// remembered (between one and two windows): the same candidate sent again
	// within it, by a reader that took over a node, is dropped.
	DuplicateWindow time.Duration `mapstructure:"duplicate_window"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	srv := configgrpc.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	return &Config{
		ServerConfig:    srv,
		LeaderElector:   leaderelectorextension.DefaultReference(),
		Enforcer:        enforcerextension.DefaultReference(),
		DuplicateWindow: 5 * time.Minute,
	}
}

// Validate checks the configuration. The readers' records reach the one
// writer of the cluster's policy state, so the listener requires mutual TLS:
// a certificate, its key and the CA that the readers' client certificates are
// checked against. Plaintext needs insecure: true, and then no tls block.
func (c *Config) Validate() error {
	var errs []error
	if err := leaderelectorextension.ValidateReference(c.LeaderElector); err != nil {
		errs = append(errs, err)
	}
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if c.NetAddr.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set, for example "+DefaultEndpoint))
	}
	switch {
	case c.Insecure && c.TLS.HasValue():
		errs = append(errs, errors.New("insecure is true but tls is set: remove tls for plaintext, or set insecure: false"))
	case !c.Insecure:
		tls := c.TLS.Get()
		if tls == nil {
			errs = append(errs, errors.New("mutual TLS is required: set tls::cert_file, tls::key_file and tls::client_ca_file, or insecure: true for plaintext"))
			break
		}
		var missing []string
		for key, set := range map[string]bool{
			"tls::cert_file":      tls.CertFile != "" || tls.CertPem != "",
			"tls::key_file":       tls.KeyFile != "" || tls.KeyPem != "",
			"tls::client_ca_file": tls.ClientCAFile != "",
		} {
			if !set {
				missing = append(missing, key)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			errs = append(errs, fmt.Errorf("mutual TLS is required: tls::cert_file, tls::key_file and tls::client_ca_file must all be set (missing: %s), or insecure: true for plaintext", strings.Join(missing, ", ")))
		}
	}
	if c.DuplicateWindow <= 0 {
		errs = append(errs, fmt.Errorf("invalid duplicate_window %s: must be positive", c.DuplicateWindow))
	}
	return errors.Join(errs...)
}
