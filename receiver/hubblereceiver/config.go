package hubblereceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/confmap"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Modes of the receiver: where it reads the flows.
const (
	// ModeRelay reads every node's flows through Hubble Relay.
	ModeRelay = "relay"
	// ModeNodes reads each node's Hubble server itself, the nodes found
	// through Cilium's Peer service as Hubble Relay finds them.
	ModeNodes = "nodes"
)

// Defaults of the endpoint and of the Peer service's TLS server name.
const (
	defaultRelayEndpoint = "hubble-relay.kube-system.svc:443"
	defaultPeerEndpoint  = "hubble-peer.kube-system.svc:443"
	// defaultPeerServerName is the name that Hubble Relay verifies in the
	// Peer service's certificate (hubble-peer.<cluster>.hubble-grpc.cilium.io,
	// for the cluster named default): the agents' Hubble server certificate
	// is issued for *.<cluster>.hubble-grpc.cilium.io.
	defaultPeerServerName = "hubble-peer.default.hubble-grpc.cilium.io"
)

// Config is the configuration of the hubble receiver.
type Config struct {
	// Mode is where the flows are read: relay (Hubble Relay) or nodes (each
	// node's Hubble server, found through the Peer service).
	Mode string `mapstructure:"mode"`

	// ClientConfig is the gRPC client to Hubble Relay, or in nodes mode to the
	// Peer service: endpoint, tls and the other configgrpc client settings.
	// In nodes mode the same settings, with each node's address and TLS
	// server name, dial every node. TLS is on unless tls::insecure is true.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// Backfill asks Hubble Relay, on start, for the flows in its buffer.
	Backfill BackfillConfig `mapstructure:"backfill"`

	// FieldMask asks Hubble for only the flow fields that the receiver reads
	// (GetFlowsRequest.field_mask): the relay and every agent then encode,
	// send and decrypt a fraction of each flow. Off, Hubble sends whole flows.
	FieldMask bool `mapstructure:"field_mask"`

	// Reconnect is the backoff between attempts to re-open a broken stream.
	Reconnect flowsource.ReconnectConfig `mapstructure:"reconnect"`

	// Batch groups the records handed to the pipeline: up to max_size records,
	// none waiting longer than timeout.
	Batch flowsource.BatchConfig `mapstructure:"batch"`

	// Enforcer, when set, names the enforcer extension. In relay mode its
	// leadership gates the stream: only the leader replica reads flows, and each
	// new term starts with the backfill. In nodes mode its membership shares
	// the nodes among the replicas: each reads the nodes it owns. Unset, the
	// receiver streams from start to shutdown, every node in nodes mode.
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
		Mode:         ModeRelay,
		ClientConfig: flowsource.NewClientConfig(defaultRelayEndpoint),
		Backfill:     BackfillConfig{Enabled: true, Since: 5 * time.Minute},
		FieldMask:    true,
		Reconnect:    flowsource.NewDefaultReconnectConfig(),
		Batch:        flowsource.NewDefaultBatchConfig(),
	}
}

// Unmarshal reads the configuration onto the defaults, which depend on the
// mode: in nodes mode, an endpoint that is not set is the Peer service's, a
// TLS server name that is not set (with TLS on) is the one that Hubble Relay
// verifies in the Peer service's certificate, and field_mask is off unless
// set.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if err := conf.Unmarshal(c); err != nil {
		return err
	}
	if c.Mode != ModeNodes {
		return nil
	}
	if !conf.IsSet("endpoint") {
		c.Endpoint = defaultPeerEndpoint
	}
	if !conf.IsSet("tls::server_name_override") && !c.TLS.Insecure {
		c.TLS.ServerName = defaultPeerServerName
	}
	// Without a relay the mask saves no relay work, and each agent would
	// still pay for applying it; the decoder skips what it does not read.
	if !conf.IsSet("field_mask") {
		c.FieldMask = false
	}
	return nil
}

// Validate checks the configuration. TLS is the default; plaintext needs an
// explicit tls::insecure: true, and then no certificate may be configured, so that
// a half-written TLS setup fails here rather than silently going plaintext.
func (c *Config) Validate() error {
	var errs []error
	if c.Mode != ModeRelay && c.Mode != ModeNodes {
		errs = append(errs, fmt.Errorf("invalid mode %q: must be one of %s, %s", c.Mode, ModeRelay, ModeNodes))
	}
	if c.Enforcer != nil {
		if err := enforcerextension.ValidateReference(*c.Enforcer); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case c.Endpoint != "":
	case c.Mode == ModeNodes:
		errs = append(errs, errors.New("endpoint must be set to the Peer service's address, for example "+defaultPeerEndpoint))
	default:
		errs = append(errs, errors.New("endpoint must be set to the Hubble Relay address, for example "+defaultRelayEndpoint))
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
