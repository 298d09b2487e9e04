package reviewextension

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/reviewextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
)

func TestLoadConfig(t *testing.T) {
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: &Config{
			Endpoint: "0.0.0.0:9000", Enforcer: component.MustNewIDWithName("enforcer", "primary"), RefreshInterval: 2 * time.Second,
			Auth: AuthConfig{Mode: AuthModeToken, AuthType: enforcerextension.AuthTypeKubeConfig, CacheTTL: time.Minute},
		}},
		{ID: component.NewIDWithName(metadata.Type, "open_on_all_addresses"), WantErr: []string{
			`invalid auth::mode "none" with endpoint "0.0.0.0:8090": a page on an address other than loopback must require a token`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_host"), WantErr: []string{
			`invalid auth::mode "none" with endpoint ":8090"`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_endpoint"), WantErr: []string{
			`invalid endpoint "8090": must be host:port`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_host"), WantErr: []string{
			`invalid endpoint "review.example:8090": must be host:port (host "review.example" is not an IP address or localhost)`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_values"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
			"invalid refresh_interval 10ms: must be at least 100ms",
			`invalid auth::mode "open": must be one of auto, token, none`,
			`invalid auth::auth_type "token": must be one of serviceAccount, kubeConfig`,
			"invalid auth::cache_ttl -1s: must not be negative",
		}},
	})
}

func TestRequiresToken(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		mode     AuthMode
		want     bool
	}{
		{"127.0.0.1:8090", AuthModeAuto, false},
		{"[::1]:8090", AuthModeAuto, false},
		{"localhost:8090", AuthModeAuto, false},
		{"0.0.0.0:8090", AuthModeAuto, true},
		{":8090", AuthModeAuto, true},
		{"10.0.0.5:8090", AuthModeAuto, true},
		{"127.0.0.1:8090", AuthModeToken, true},
		{"127.0.0.1:8090", AuthModeNone, false},
	} {
		cfg := &Config{Endpoint: tc.endpoint, Auth: AuthConfig{Mode: tc.mode}}
		if got := cfg.requiresToken(); got != tc.want {
			t.Errorf("endpoint %s mode %s: requiresToken %v, want %v", tc.endpoint, tc.mode, got, tc.want)
		}
	}
}
