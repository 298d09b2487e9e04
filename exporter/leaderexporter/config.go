package leaderexporter

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// DefaultPort is the leader receiver's default port.
const DefaultPort = 4320

// Config is the configuration of the leader exporter.
type Config struct {
	// Enforcer names the enforcer extension that locates the leader.
	Enforcer component.ID `mapstructure:"enforcer"`

	// Port is the leader receiver's port on the leader's pod address.
	Port int `mapstructure:"port"`

	// ClientConfig is the gRPC client to the leader receiver, handed to the
	// collector's OTLP exporter with the endpoint set to the leader's
	// address: tls, headers, compression, keepalive, auth and the other
	// configgrpc client settings, but not endpoint, which the enforcer
	// extension finds. tls is the client side of the mutual TLS to the
	// leader receiver; the address is a pod IP, so the leader's certificate
	// is checked against tls::server_name_override (the Service's DNS name,
	// say). Plaintext needs an explicit tls::insecure: true.
	configgrpc.ClientConfig `mapstructure:",squash"`

	// Aggregation merges learned edges and observations before they are sent.
	Aggregation AggregationConfig `mapstructure:"aggregation"`

	// ResendWindow is the longest a batch of learned edges and observations
	// is kept after the leader took it, to be sent again to a new leader: the
	// previous one may have died before it wrote the batch's counts, which it
	// writes at most once per the writer's observed_interval, and later while
	// its writes queue. A batch goes sooner once the leader says it wrote
	// it. 0 keeps nothing.
	ResendWindow time.Duration `mapstructure:"resend_window"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`

	_ struct{}
}

// AggregationConfig bounds how long and how much the exporter holds.
type AggregationConfig struct {
	// Interval is how often the held edges and observations are sent.
	Interval time.Duration `mapstructure:"interval"`
	// MaxEdges bounds the distinct edges and observations held: reaching it
	// sends them at once.
	MaxEdges int `mapstructure:"max_edges"`
}

// DefaultMaxEdges is the default of aggregation::max_edges.
const DefaultMaxEdges = 10_000

// DefaultResendWindow is the default of resend_window: what a large
// cluster's first proposals take to be written at the writer's rate (minutes),
// with room. In the steady state a batch goes within an observed_interval or
// two, when the leader says that it wrote it.
const DefaultResendWindow = 10 * time.Minute

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	// A new leader takes over within a lease: try again sooner than the
	// collector's default of 5s.
	retry.InitialInterval, retry.MaxInterval = time.Second, 10*time.Second
	// One batch at a time, in order: the leader skips a batch sent again
	// by its number, which holds only if no later batch got there first.
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.NumConsumers = 1
	return &Config{
		Enforcer:      enforcerextension.DefaultReference(),
		Port:          DefaultPort,
		ClientConfig:  flowsource.NewClientConfig(""),
		Aggregation:   AggregationConfig{Interval: time.Second, MaxEdges: DefaultMaxEdges},
		ResendWindow:  DefaultResendWindow,
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:   configoptional.Some(queue),
		RetryConfig:   retry,
	}
}

// Validate checks the configuration. TLS is the default; plaintext needs an
// explicit tls::insecure: true, and then no certificate may be configured, so
// that a half-written TLS setup fails here rather than silently going
// plaintext. With TLS, the client certificate that the leader receiver asks
// for is required.
func (c *Config) Validate() error {
	var errs []error
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("invalid port %d: must be between 1 and 65535", c.Port))
	}
	if c.Endpoint != "" {
		errs = append(errs, fmt.Errorf("endpoint %q must not be set: the leader's address comes from the enforcer extension; set port", c.Endpoint))
	}
	tls := c.TLS
	hasCert := tls.CertFile != "" || tls.CertPem != ""
	hasKey := tls.KeyFile != "" || tls.KeyPem != ""
	if tls.Insecure {
		if tls.CAFile != "" || tls.CAPem != "" || hasCert || hasKey {
			errs = append(errs, errors.New("tls::insecure is true but a CA, certificate or key is set: remove them for plaintext, or set tls::insecure: false"))
		}
	} else if !hasCert || !hasKey {
		errs = append(errs, errors.New("mutual TLS is required by the leader receiver: tls::cert_file and tls::key_file must be set, or tls::insecure: true for plaintext"))
	}
	if c.Aggregation.Interval <= 0 {
		errs = append(errs, fmt.Errorf("invalid aggregation::interval %s: must be positive", c.Aggregation.Interval))
	}
	if c.Aggregation.MaxEdges < 1 {
		errs = append(errs, fmt.Errorf("invalid aggregation::max_edges %d: must be at least 1", c.Aggregation.MaxEdges))
	}
	if c.ResendWindow < 0 {
		errs = append(errs, fmt.Errorf("invalid resend_window %s: must not be negative", c.ResendWindow))
	}
	if q := c.QueueConfig.Get(); q != nil {
		if q.NumConsumers != 1 {
			errs = append(errs, fmt.Errorf("invalid sending_queue::num_consumers %d: must be 1, so that the leader takes each reader's batches in order", q.NumConsumers))
		}
		if q.Batch.HasValue() {
			// A merged request would mix violation candidates, which the
			// leader reports at once, into the batches kept to send again.
			errs = append(errs, errors.New("invalid sending_queue::batch: must not be set: the exporter merges learned edges itself (aggregation), and keeps each batch of them apart from the violation candidates"))
		}
	}
	return errors.Join(errs...)
}
