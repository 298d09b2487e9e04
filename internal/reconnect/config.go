// Package reconnect holds the reconnection settings that every streaming flow
// source shares, so that they read and validate the same way everywhere.
package reconnect

import (
	"errors"
	"fmt"
	"time"
)

// Config is the exponential backoff between attempts to re-open a broken stream.
// Each wait is drawn with jitter and doubles up to MaxInterval.
type Config struct {
	// InitialInterval is the wait before the first retry.
	InitialInterval time.Duration `mapstructure:"initial_interval"`
	// MaxInterval caps the wait between retries.
	MaxInterval time.Duration `mapstructure:"max_interval"`
}

// NewDefaultConfig returns the defaults: 1s, doubling up to 30s.
func NewDefaultConfig() Config {
	return Config{InitialInterval: time.Second, MaxInterval: 30 * time.Second}
}

// Validate checks that the intervals are positive and ordered.
func (c *Config) Validate() error {
	var errs []error
	if c.InitialInterval <= 0 {
		errs = append(errs, fmt.Errorf("invalid initial_interval %s: must be positive", c.InitialInterval))
	}
	if c.MaxInterval < c.InitialInterval {
		errs = append(errs, fmt.Errorf("invalid max_interval %s: must be at least initial_interval (%s)", c.MaxInterval, c.InitialInterval))
	}
	return errors.Join(errs...)
}
