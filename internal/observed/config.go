package observed

import (
	"fmt"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Config is what a writer of observed edges is configured with; the proposal
// writer and the violation processor squash it into their own configuration.
type Config struct {
	// ObservedInterval is how often, at most, an object's observed edges are
	// written when nothing else of its status changes: their flow counts
	// change with every flow, so the writes follow this interval instead.
	ObservedInterval time.Duration `mapstructure:"observed_interval"`
	// MaxObserved bounds the edges that status.observed lists, the most
	// recently seen; the totals count the rest.
	MaxObserved int `mapstructure:"max_observed"`
	// MaxTrackedEdges bounds the distinct observed edges held in memory for
	// one object; new edges beyond it are counted, not tracked.
	MaxTrackedEdges int `mapstructure:"max_tracked_edges"`
}

// DefaultConfig is the default: a write a minute at most, 32 edges listed,
// 1,024 tracked per object.
func DefaultConfig() Config {
	return Config{ObservedInterval: time.Minute, MaxObserved: 32, MaxTrackedEdges: 1024}
}

// Validate checks the configuration.
func (c *Config) Validate() []error {
	var errs []error
	if c.ObservedInterval < time.Second {
		errs = append(errs, fmt.Errorf("invalid observed_interval %s: must be at least 1s", c.ObservedInterval))
	}
	if c.MaxObserved < 1 || c.MaxObserved > v1alpha1.MaxObservedEdges {
		errs = append(errs, fmt.Errorf("invalid max_observed %d: must be between 1 and %d", c.MaxObserved, v1alpha1.MaxObservedEdges))
	}
	if c.MaxTrackedEdges < c.MaxObserved {
		errs = append(errs, fmt.Errorf("invalid max_tracked_edges %d: must be at least max_observed (%d)", c.MaxTrackedEdges, c.MaxObserved))
	}
	return errs
}
