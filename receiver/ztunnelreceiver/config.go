package ztunnelreceiver

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Config is the configuration of the ztunnel receiver.
type Config struct {
	// Protocols are the OTLP listeners that fluent-bit (or the node agent) sends
	// ztunnel log records to.
	Protocols Protocols `mapstructure:"protocols"`

	// TrustDomain is the SPIFFE trust domain of the mesh; identities are kept as
	// <trust-domain>/ns/<namespace>/sa/<service-account>.
	TrustDomain string `mapstructure:"trust_domain"`

	// JoinWindow is how long a policy-decision line waits for the access line of
	// the same connection, which carries the destination pod and real port.
	JoinWindow time.Duration `mapstructure:"join_window"`

	_ struct{}
}

// Protocols are the OTLP listeners of the receiver.
type Protocols struct {
	// GRPC is the OTLP/gRPC listener (default localhost:4317).
	GRPC configoptional.Optional[configgrpc.ServerConfig] `mapstructure:"grpc"`
	// HTTP is the OTLP/HTTP listener for /v1/logs (default localhost:4318), off
	// unless configured.
	HTTP configoptional.Optional[confighttp.ServerConfig] `mapstructure:"http"`
}

func createDefaultConfig() component.Config {
	grpc := configgrpc.NewDefaultServerConfig()
	grpc.NetAddr.Endpoint = "localhost:4317"
	http := confighttp.NewDefaultServerConfig()
	http.NetAddr.Endpoint = "localhost:4318"
	return &Config{
		Protocols: Protocols{
			GRPC: configoptional.Some(grpc),
			HTTP: configoptional.Default(http),
		},
		TrustDomain: "cluster.local",
		JoinWindow:  5 * time.Second,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if !c.Protocols.GRPC.HasValue() && !c.Protocols.HTTP.HasValue() {
		errs = append(errs, errors.New("protocols must enable at least one of grpc, http"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.TrustDomain) {
		errs = append(errs, fmt.Errorf("invalid trust_domain %q: %s", c.TrustDomain, msg))
	}
	if c.JoinWindow <= 0 {
		errs = append(errs, fmt.Errorf("invalid join_window %s: must be positive", c.JoinWindow))
	}
	return errors.Join(errs...)
}
