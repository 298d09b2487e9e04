package reviewextension

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/kubewarden/network-enforcer/extension/reviewextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

func TestLoadConfig(t *testing.T) {
	custom := createDefaultConfig().(*Config)
	custom.NetAddr.Endpoint = "0.0.0.0:9000"
	custom.TLS = configoptional.Some(configtls.ServerConfig{Config: configtls.Config{CertFile: "/etc/review/tls.crt", KeyFile: "/etc/review/tls.key"}})
	custom.Enforcer = component.MustNewIDWithName("enforcer", "primary")
	custom.PolicyController = component.MustNewIDWithName("policy_controller", "primary")
	custom.RefreshInterval = 2 * time.Second
	custom.Access = AccessConfig{Mode: AuthModeToken, APIConfig: k8sconfig.APIConfig{AuthType: k8sconfig.AuthTypeKubeConfig}, CacheTTL: time.Minute,
		Audience: "review.example"}
	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "custom"), Want: custom},
		{ID: component.NewIDWithName(metadata.Type, "open_on_all_addresses"), WantErr: []string{
			`invalid access::mode "none" with endpoint "0.0.0.0:8090": a page on an address other than loopback must require a token`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_host"), WantErr: []string{
			`invalid access::mode "none" with endpoint ":8090"`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_endpoint"), WantErr: []string{
			`invalid endpoint "8090": must be host:port`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_host"), WantErr: []string{
			`invalid endpoint "review.example:8090": must be host:port (host "review.example" is not an IP address or localhost)`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "unix_socket"), WantErr: []string{
			`invalid transport "unix": the page listens on tcp, tcp4 or tcp6`,
		}},
		{ID: component.NewIDWithName(metadata.Type, "bad_values"), WantErr: []string{
			`invalid enforcer "health_check": must name an extension of type "enforcer"`,
			`invalid policy_controller "enforcer": must name an extension of type "policy_controller"`,
			"invalid refresh_interval 10ms: must be at least 100ms",
			`invalid access::mode "open": must be one of auto, token, none`,
			`access: invalid auth_type "token": must be one of serviceAccount, kubeConfig`,
			"invalid access::cache_ttl -1s: must not be negative",
			"invalid access::audience: must not be empty",
		}},
	})
}

// TestFormerAuthKeys: the page's token settings were under auth::, which
// confighttp now owns (a collector authenticator extension); such a
// configuration is told where they went.
func TestFormerAuthKeys(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "former_auth_keys").String())
	if err != nil {
		t.Fatal(err)
	}
	err = sub.Unmarshal(NewFactory().CreateDefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "auth::mode: the review page's token settings are under access:: (access::mode)") {
		t.Fatalf("auth::mode: %v, want a pointer to access::mode", err)
	}
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
		cfg := &Config{Access: AccessConfig{Mode: tc.mode}}
		cfg.NetAddr.Endpoint = tc.endpoint
		if got := cfg.requiresToken(); got != tc.want {
			t.Errorf("endpoint %s mode %s: requiresToken %v, want %v", tc.endpoint, tc.mode, got, tc.want)
		}
	}
}
