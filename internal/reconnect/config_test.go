package reconnect

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"default":       {NewDefaultConfig(), ""},
		"equal":         {Config{InitialInterval: time.Second, MaxInterval: time.Second}, ""},
		"zero initial":  {Config{MaxInterval: time.Second}, "invalid initial_interval 0s: must be positive"},
		"max below min": {Config{InitialInterval: 5 * time.Second, MaxInterval: time.Second}, "invalid max_interval 1s: must be at least initial_interval (5s)"},
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
