package enforcerextension

import (
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"

	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Config is the configuration of the enforcer extension.
type Config struct {
	// APIConfig is how to reach the Kubernetes API (auth_type).
	k8sconfig.APIConfig `mapstructure:",squash"`

	// LeaderElection configures the Lease that elects the one active replica.
	LeaderElection LeaderElectionConfig `mapstructure:"leader_election"`

	// DataPlane is the data plane that enforces the rendered objects (istio,
	// calico or cilium): what it does with peers beyond the workloads is its
	// own, and the previews and monitor verdicts judge as it does. Empty
	// judges by the spec alone, as the Kubernetes API documents it.
	DataPlane netpolmatch.DataPlane `mapstructure:"data_plane"`

	_ struct{}
}

// LeaderElectionConfig configures leader election on a coordination.k8s.io Lease.
type LeaderElectionConfig struct {
	// LeaseName is the name of the Lease.
	LeaseName string `mapstructure:"lease_name"`
	// LeaseNamespace is the namespace of the Lease; empty means the namespace the
	// collector runs in.
	LeaseNamespace string `mapstructure:"lease_namespace"`
	// LeaseDuration is how long a standby waits before it takes over a lease that
	// was not renewed.
	LeaseDuration time.Duration `mapstructure:"lease_duration"`
	// RenewDeadline is how long the leader keeps trying to renew before it gives
	// leadership up.
	RenewDeadline time.Duration `mapstructure:"renew_deadline"`
	// RetryPeriod is the wait between attempts to acquire or renew.
	RetryPeriod time.Duration `mapstructure:"retry_period"`
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig: k8sconfig.Default(),
		LeaderElection: LeaderElectionConfig{
			LeaseName:     "network-enforcer",
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
		},
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	errs := []error{c.APIConfig.Validate(), c.LeaderElection.validate()}
	switch c.DataPlane {
	case "", netpolmatch.DataPlaneIstio, netpolmatch.DataPlaneCalico, netpolmatch.DataPlaneCilium:
	default:
		errs = append(errs, fmt.Errorf("invalid data_plane %q: must be one of %s, %s, %s", c.DataPlane,
			netpolmatch.DataPlaneIstio, netpolmatch.DataPlaneCalico, netpolmatch.DataPlaneCilium))
	}
	return errors.Join(errs...)
}

// validate checks the Lease name and that the durations are ordered the way
// client-go's leader election requires.
func (le *LeaderElectionConfig) validate() error {
	var errs []error
	for _, msg := range validation.IsDNS1123Subdomain(le.LeaseName) {
		errs = append(errs, fmt.Errorf("invalid leader_election::lease_name %q: %s", le.LeaseName, msg))
	}
	if le.LeaseNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(le.LeaseNamespace) {
			errs = append(errs, fmt.Errorf("invalid leader_election::lease_namespace %q: %s", le.LeaseNamespace, msg))
		}
	}
	if le.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("invalid leader_election::retry_period %s: must be positive", le.RetryPeriod))
	}
	if le.RenewDeadline <= le.RetryPeriod {
		errs = append(errs, fmt.Errorf("invalid leader_election::renew_deadline %s: must be greater than retry_period (%s)", le.RenewDeadline, le.RetryPeriod))
	}
	if le.LeaseDuration <= le.RenewDeadline {
		errs = append(errs, fmt.Errorf("invalid leader_election::lease_duration %s: must be greater than renew_deadline (%s)", le.LeaseDuration, le.RenewDeadline))
	}
	return errors.Join(errs...)
}
