package flowsource

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/config/configretry"
)

// ReconnectConfig is the backoff between attempts to re-open a broken flow
// stream: the collector's configretry.BackOffConfig (its keys and its own
// checks), with what a stream that must never give up asks of it besides.
// Each wait is drawn with jitter (randomization_factor) and grows by
// multiplier up to max_interval.
type ReconnectConfig struct {
	configretry.BackOffConfig `mapstructure:",squash"`
}

// NewDefaultReconnectConfig returns the defaults: 1s, doubling up to 30s, each
// wait within half of its value either way, for as long as the receiver runs.
func NewDefaultReconnectConfig() ReconnectConfig {
	b := configretry.NewDefaultBackOffConfig()
	b.InitialInterval, b.MaxInterval, b.Multiplier, b.RandomizationFactor, b.MaxElapsedTime = time.Second, 30*time.Second, 2, 0.5, 0
	return ReconnectConfig{BackOffConfig: b}
}

// Validate checks what configretry leaves open: a stream is always re-opened,
// after a positive wait that does not shrink, and never given up on.
// configretry's own Validate checks the rest.
func (c *ReconnectConfig) Validate() error {
	var errs []error
	if !c.Enabled {
		errs = append(errs, errors.New("invalid enabled false: a broken flow stream is always re-opened, or the receiver would read no more flows"))
	}
	if c.InitialInterval <= 0 {
		errs = append(errs, fmt.Errorf("invalid initial_interval %s: must be positive", c.InitialInterval))
	}
	if c.MaxInterval < c.InitialInterval {
		errs = append(errs, fmt.Errorf("invalid max_interval %s: must be at least initial_interval (%s)", c.MaxInterval, c.InitialInterval))
	}
	if c.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("invalid multiplier %g: must be at least 1", c.Multiplier))
	}
	if c.MaxElapsedTime != 0 {
		errs = append(errs, fmt.Errorf("invalid max_elapsed_time %s: must be 0, a flow stream is re-opened for as long as the receiver runs", c.MaxElapsedTime))
	}
	return errors.Join(errs...)
}
