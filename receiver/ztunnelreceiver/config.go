package ztunnelreceiver

import (
	"errors"
	"fmt"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/fileconsumer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// DefaultInclude is where the kubelet writes the logs of ztunnel's istio-proxy
// container on a node.
const DefaultInclude = "/var/log/pods/istio-system_ztunnel-*/istio-proxy/*.log"

// Config is the configuration of the ztunnel receiver.
type Config struct {
	// Protocols are the OTLP listeners that fluent-bit (or the node agent) sends
	// ztunnel log records to. Each is off unless configured.
	Protocols Protocols `mapstructure:"protocols"`

	// File tails ztunnel's container log files on the node, so that this binary
	// runs as the node agent. Off unless configured.
	File configoptional.Optional[FileConfig] `mapstructure:"file"`

	// TrustDomain is the SPIFFE trust domain of the mesh. Identities are kept as
	// <trust-domain>/ns/<namespace>/sa/<service-account>; a source identity from
	// another trust domain is dropped and counted, so that no policy learns a
	// principal the operator did not expect.
	TrustDomain string `mapstructure:"trust_domain"`

	// JoinWindow is how long a policy-decision line waits for the access line of
	// the same connection, which carries the destination pod and real port.
	JoinWindow time.Duration `mapstructure:"join_window"`

	// JoinMaxHeld bounds what the join holds: at most this many access lines
	// and as many decision lines wait at once. Over it the oldest leave before
	// their window, counted in network_enforcer_receiver_join_evictions.
	JoinMaxHeld int `mapstructure:"join_max_held"`

	// LeaderElector, when set, names the leader elector whose terms gate the
	// OTLP listeners: a standby replica refuses records with a retryable
	// error (gRPC Unavailable, HTTP 503), so that the sender tries again and
	// reaches the leader, the one replica that learns and writes. Unset, the
	// listeners accept always (a single replica, or the node agent).
	LeaderElector *component.ID `mapstructure:"leader_elector"`

	_ struct{}
}

// Protocols are the OTLP listeners of the receiver.
type Protocols struct {
	// GRPC is the OTLP/gRPC listener (localhost:4317 when enabled).
	GRPC configoptional.Optional[configgrpc.ServerConfig] `mapstructure:"grpc"`
	// HTTP is the OTLP/HTTP listener for /v1/logs (localhost:4318 when enabled).
	HTTP configoptional.Optional[confighttp.ServerConfig] `mapstructure:"http"`
}

// FileConfig is the node agent's file input: contrib's file consumer settings
// (include, exclude, start_at, poll_interval, ...) and the storage extension that
// keeps the read offsets across restarts.
type FileConfig struct {
	fileconsumer.Config `mapstructure:",squash"`

	// Storage is the ID of a storage extension (file_storage) that checkpoints
	// the offsets; without one a restart starts again from start_at.
	Storage *component.ID `mapstructure:"storage"`
}

// DefaultJoinMaxHeld is the default of join_max_held: 20,000 connections a
// second for the default window, in about 35 MiB (some 170 bytes a line).
const DefaultJoinMaxHeld = 100_000

func createDefaultConfig() component.Config {
	grpc := configgrpc.NewDefaultServerConfig()
	grpc.NetAddr.Endpoint = "localhost:4317"
	http := confighttp.NewDefaultServerConfig()
	http.NetAddr.Endpoint = "localhost:4318"
	file := fileconsumer.NewConfig()
	file.Include = []string{DefaultInclude}
	return &Config{
		Protocols: Protocols{
			GRPC: configoptional.Default(grpc),
			HTTP: configoptional.Default(http),
		},
		File:        configoptional.Default(FileConfig{Config: *file}),
		TrustDomain: "cluster.local",
		JoinWindow:  5 * time.Second,
		JoinMaxHeld: DefaultJoinMaxHeld,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if !c.Protocols.GRPC.HasValue() && !c.Protocols.HTTP.HasValue() && !c.File.HasValue() {
		errs = append(errs, errors.New("no input: configure at least one of protocols::grpc, protocols::http, file"))
	}
	if c.File.HasValue() {
		f := c.File.Get()
		if len(f.Include) == 0 {
			errs = append(errs, errors.New("file::include must name at least one glob"))
		}
		if f.StartAt != "beginning" && f.StartAt != "end" {
			errs = append(errs, fmt.Errorf("invalid file::start_at %q: must be one of beginning, end", f.StartAt))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(c.TrustDomain) {
		errs = append(errs, fmt.Errorf("invalid trust_domain %q: %s", c.TrustDomain, msg))
	}
	if c.JoinWindow <= 0 {
		errs = append(errs, fmt.Errorf("invalid join_window %s: must be positive", c.JoinWindow))
	}
	if c.JoinMaxHeld < 1 {
		errs = append(errs, fmt.Errorf("invalid join_max_held %d: must be at least 1", c.JoinMaxHeld))
	}
	if c.LeaderElector != nil {
		if err := leaderelectorextension.ValidateReference(*c.LeaderElector); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
