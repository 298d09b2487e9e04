package hubblereceiver

import (
	"errors"

	"go.opentelemetry.io/collector/config/configgrpc"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Defaults of each mode's endpoint and of the Peer service's TLS server name.
const (
	defaultRelayEndpoint = "hubble-relay.kube-system.svc:443"
	defaultPeerEndpoint  = "hubble-peer.kube-system.svc:443"
	// defaultPeerServerName is the name that Hubble Relay verifies in the
	// Peer service's certificate (hubble-peer.<cluster>.hubble-grpc.cilium.io,
	// for the cluster named default): the agents' Hubble server certificate
	// is issued for *.<cluster>.hubble-grpc.cilium.io.
	defaultPeerServerName = "hubble-peer.default.hubble-grpc.cilium.io"
)

// RelayConfig is relay mode's: the gRPC client to Hubble Relay.
type RelayConfig struct {
	// ClientConfig is the gRPC client to Hubble Relay: endpoint, tls and the
	// other configgrpc client settings. TLS is on unless tls::insecure is true.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// FieldMask asks Hubble for only the flow fields that the receiver reads
	// (GetFlowsRequest.field_mask): the relay and every agent then encode,
	// send and decrypt a fraction of each flow. Off, Hubble sends whole flows.
	FieldMask bool `mapstructure:"field_mask"`

	_ struct{}
}

// NodesConfig is nodes mode's: the gRPC client to the Peer service, whose
// settings, with each node's address and TLS server name, dial every node
// too. Hubble Relay has one client TLS configuration for both, and so does
// the receiver: the certificate, key and CA serve for the Peer service and
// for every node alike.
type NodesConfig struct {
	// ClientConfig is the gRPC client to the Peer service: endpoint, tls and
	// the other configgrpc client settings, which dial every node too. TLS is
	// on unless tls::insecure is true.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// FieldMask asks each node's Hubble server for only the flow fields that
	// the receiver reads. Off by default: without a relay the mask saves no
	// relay work, and each agent would still pay for applying it, while the
	// receiver's decoder skips what it does not read.
	FieldMask bool `mapstructure:"field_mask"`

	_ struct{}
}

func defaultRelayConfig() RelayConfig {
	return RelayConfig{ClientConfig: flowsource.NewClientConfig(defaultRelayEndpoint), FieldMask: true}
}

func defaultNodesConfig() NodesConfig {
	c := NodesConfig{ClientConfig: flowsource.NewClientConfig(defaultPeerEndpoint)}
	c.TLS.ServerName = defaultPeerServerName
	return c
}

// Validate checks relay mode's settings.
func (c *RelayConfig) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set to the Hubble Relay address, for example "+defaultRelayEndpoint))
	}
	return errors.Join(append(errs, checkTLS(&c.ClientConfig)...)...)
}

// Validate checks nodes mode's settings.
func (c *NodesConfig) Validate() error {
	var errs []error
	if c.Endpoint == "" {
		errs = append(errs, errors.New("endpoint must be set to the Peer service's address, for example "+defaultPeerEndpoint))
	}
	return errors.Join(append(errs, checkTLS(&c.ClientConfig)...)...)
}

// checkTLS checks a mode's TLS settings. TLS is the default; plaintext needs
// an explicit tls::insecure: true, and then no certificate may be configured,
// so that a half-written TLS setup fails here rather than silently going
// plaintext.
func checkTLS(c *configgrpc.ClientConfig) []error {
	tls := c.TLS
	if tls.Insecure {
		if tls.CAFile != "" || tls.CertFile != "" || tls.KeyFile != "" || tls.CAPem != "" || tls.CertPem != "" || tls.KeyPem != "" {
			return []error{errors.New("tls::insecure is true but a CA, certificate or key is set: remove them for plaintext, or set tls::insecure: false")}
		}
	} else if (tls.CertFile == "" && tls.CertPem == "") != (tls.KeyFile == "" && tls.KeyPem == "") {
		return []error{errors.New("tls::cert_file and tls::key_file must be set together")}
	}
	return nil
}
