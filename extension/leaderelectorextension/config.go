package leaderelectorextension

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// Config is the configuration of the leader elector: the keys of contrib's
// k8s_leader_elector.
type Config struct {
	// APIConfig is how to reach the Kubernetes API (auth_type).
	k8sconfig.APIConfig `mapstructure:",squash"`

	// LeaseName is the name of the Lease.
	LeaseName string `mapstructure:"lease_name"`
	// LeaseNamespace is the namespace of the Lease; empty means the namespace
	// the collector runs in.
	LeaseNamespace string `mapstructure:"lease_namespace"`
	// LeaseDuration is how long a standby waits before it takes over a lease
	// that was not renewed.
	LeaseDuration time.Duration `mapstructure:"lease_duration"`
	// RenewDeadline is how long the leader keeps trying to renew before it
	// gives leadership up.
	RenewDeadline time.Duration `mapstructure:"renew_deadline"`
	// RetryPeriod is the wait between attempts to acquire or renew.
	RetryPeriod time.Duration `mapstructure:"retry_period"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig:     k8sconfig.Default(),
		LeaseName:     "network-enforcer",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	}
}

// Validate checks the Lease's name and namespace, and that the durations are
// ordered the way client-go's leader election requires.
func (c *Config) Validate() error {
	errs := []error{c.APIConfig.Validate()}
	for _, msg := range validation.IsDNS1123Subdomain(c.LeaseName) {
		errs = append(errs, fmt.Errorf("invalid lease_name %q: %s", c.LeaseName, msg))
	}
	if c.LeaseNamespace != "" {
		for _, msg := range validation.IsDNS1123Label(c.LeaseNamespace) {
			errs = append(errs, fmt.Errorf("invalid lease_namespace %q: %s", c.LeaseNamespace, msg))
		}
	}
	if c.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("invalid retry_period %s: must be positive", c.RetryPeriod))
	}
	if c.RenewDeadline <= c.RetryPeriod {
		errs = append(errs, fmt.Errorf("invalid renew_deadline %s: must be greater than retry_period (%s)", c.RenewDeadline, c.RetryPeriod))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("invalid lease_duration %s: must be greater than renew_deadline (%s)", c.LeaseDuration, c.RenewDeadline))
	}
	return errors.Join(errs...)
}
