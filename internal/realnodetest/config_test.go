package realnodetest

import (
	"strings"
	"testing"
)

func TestConfigRefusesWhatItCannotRun(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Root: "/x", CNI: "calico"}, `invalid CNI "calico": must be one of cilium, bridge`},
		{Config{CNI: CNIBridge}, "invalid root: the project's root is required"},
	} {
		_, err := tc.cfg.withDefaults()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// A guard that its starter dismissed ends at once and cleans nothing; one
// whose configuration it cannot read says so. (The clean-up when the starter
// dies is the real-node suite's: it ends its node that way.)
func TestGuardEndsWhenDismissed(t *testing.T) {
	if code := guardMain(`{"root":"/x","cni":"cilium","state":"/nonexistent"}`, strings.NewReader(dismissal)); code != 0 {
		t.Errorf("a dismissed guard exited %d, want 0", code)
	}
	if code := guardMain(`{`, strings.NewReader("")); code != 2 {
		t.Errorf("a guard with a broken configuration exited %d, want 2", code)
	}
}
