package flowsource

import (
	"strings"
	"testing"
	"time"
)

func TestReconnectValidate(t *testing.T) {
	def := NewDefaultReconnectConfig
	with := func(change func(*ReconnectConfig)) ReconnectConfig {
		c := def()
		change(&c)
		return c
	}
	for name, tc := range map[string]struct {
		cfg  ReconnectConfig
		want string
	}{
		"default":       {def(), ""},
		"equal":         {with(func(c *ReconnectConfig) { c.MaxInterval = c.InitialInterval }), ""},
		"zero initial":  {with(func(c *ReconnectConfig) { c.InitialInterval = 0 }), "invalid initial_interval 0s: must be positive"},
		"max below min": {with(func(c *ReconnectConfig) { c.InitialInterval = 40 * time.Second }), "invalid max_interval 30s: must be at least initial_interval (40s)"},
		"disabled":      {with(func(c *ReconnectConfig) { c.Enabled = false }), "invalid enabled false"},
		"gives up":      {with(func(c *ReconnectConfig) { c.MaxElapsedTime = time.Hour }), "invalid max_elapsed_time 1h0m0s: must be 0"},
		"shrinks":       {with(func(c *ReconnectConfig) { c.Multiplier = 0.5 }), "invalid multiplier 0.5: must be at least 1"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
