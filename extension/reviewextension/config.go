package reviewextension

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// AuthMode says when the page asks for a token.
type AuthMode string

const (
	// AuthModeAuto requires a token unless the endpoint is a loopback address,
	// which only processes of the pod (and kubectl port-forward) reach.
	AuthModeAuto AuthMode = "auto"
	// AuthModeToken always requires a token.
	AuthModeToken AuthMode = "token"
	// AuthModeNone never asks for one; only a loopback endpoint may use it.
	AuthModeNone AuthMode = "none"
)

// Config is the configuration of the review extension.
type Config struct {
	// Endpoint is the address the page listens on, host:port.
	Endpoint string `mapstructure:"endpoint"`
	// Enforcer names the enforcer extension whose cache the page reads.
	Enforcer component.ID `mapstructure:"enforcer"`
	// RefreshInterval is how often an open page asks for the graph again.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// Auth configures who may see the page.
	Auth AuthConfig `mapstructure:"auth"`

	_ struct{}
}

// AuthConfig configures the page's authentication.
type AuthConfig struct {
	// Mode is auto, token or none.
	Mode AuthMode `mapstructure:"mode"`
	// AuthType is how the extension reaches the API server that reviews the
	// tokens: serviceAccount or kubeConfig.
	AuthType enforcerextension.AuthType `mapstructure:"auth_type"`
	// CacheTTL is how long a reviewed token's answer is kept, so that each
	// poll of an open page is not a TokenReview.
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
}

func createDefaultConfig() component.Config {
	return &Config{
		Endpoint:        "127.0.0.1:8090",
		Enforcer:        enforcerextension.DefaultReference(),
		RefreshInterval: 5 * time.Second,
		Auth: AuthConfig{
			Mode:     AuthModeAuto,
			AuthType: enforcerextension.AuthTypeServiceAccount,
			CacheTTL: 30 * time.Second,
		},
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	loopback, err := isLoopback(c.Endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("invalid endpoint %q: must be host:port (%w)", c.Endpoint, err))
	}
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if c.RefreshInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("invalid refresh_interval %s: must be at least 100ms", c.RefreshInterval))
	}
	switch c.Auth.Mode {
	case AuthModeAuto, AuthModeToken:
	case AuthModeNone:
		if err == nil && !loopback {
			errs = append(errs, fmt.Errorf("invalid auth::mode %q with endpoint %q: a page on an address other than loopback must require a token (auto or token)", c.Auth.Mode, c.Endpoint))
		}
	default:
		errs = append(errs, fmt.Errorf("invalid auth::mode %q: must be one of %s, %s, %s", c.Auth.Mode, AuthModeAuto, AuthModeToken, AuthModeNone))
	}
	switch c.Auth.AuthType {
	case enforcerextension.AuthTypeServiceAccount, enforcerextension.AuthTypeKubeConfig:
	default:
		errs = append(errs, fmt.Errorf("invalid auth::auth_type %q: must be one of %s, %s", c.Auth.AuthType,
			enforcerextension.AuthTypeServiceAccount, enforcerextension.AuthTypeKubeConfig))
	}
	if c.Auth.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("invalid auth::cache_ttl %s: must not be negative", c.Auth.CacheTTL))
	}
	return errors.Join(errs...)
}

// requiresToken reports whether requests must carry a reviewed token.
func (c *Config) requiresToken() bool {
	switch c.Auth.Mode {
	case AuthModeToken:
		return true
	case AuthModeNone:
		return false
	case AuthModeAuto:
	}
	loopback, err := isLoopback(c.Endpoint)
	return err != nil || !loopback
}

// isLoopback reports whether endpoint listens on loopback only. An empty host
// listens on every address, so it is not loopback.
func isLoopback(endpoint string) (bool, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return false, err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	if host == "" {
		return false, nil
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false, fmt.Errorf("host %q is not an IP address or localhost", host)
	}
	return addr.IsLoopback(), nil
}
