package reviewextension

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/confignet"
	"go.opentelemetry.io/collector/confmap"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
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

// DefaultAudience is the audience that a reader's token must be made for by
// default, and the one the chart passes: a token minted for the API server
// alone is not one that the page keeps in a cookie.
const DefaultAudience = "network-enforcer-review"

// DefaultEndpoint is where the page listens unless told otherwise: loopback,
// which only the pod's processes and kubectl port-forward reach.
const DefaultEndpoint = "127.0.0.1:8090"

// Config is the configuration of the review extension.
type Config struct {
	// ServerConfig is the collector's HTTP server settings: endpoint, tls and
	// the rest of confighttp's keys.
	confighttp.ServerConfig `mapstructure:",squash"`
	// Enforcer names the enforcer extension whose cache the page reads.
	Enforcer component.ID `mapstructure:"enforcer"`
	// PolicyController names the policy controller extension whose render
	// code shows a proposal's native objects.
	PolicyController component.ID `mapstructure:"policy_controller"`
	// RefreshInterval is how often an open page asks for the graph again.
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// Access configures who may see the page. It is not under auth, which is
	// confighttp's key for a collector authenticator extension.
	Access AccessConfig `mapstructure:"access"`

	_ struct{}
}

// AccessConfig configures the page's token checks.
type AccessConfig struct {
	// Mode is auto, token or none.
	Mode AuthMode `mapstructure:"mode"`
	// APIConfig is how the extension reaches the API server that reviews the
	// tokens (auth_type).
	k8sconfig.APIConfig `mapstructure:",squash"`
	// CacheTTL is how long a reviewed token's answer is kept, so that each
	// poll of an open page is not a TokenReview.
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
	// Audience is the audience that a token must have been made for (kubectl
	// create token SA --audience AUDIENCE): the TokenReview asks for it, so
	// that a token for the API server itself, which would let whoever holds
	// the cookie act as its user there, is refused.
	Audience string `mapstructure:"audience"`
}

func createDefaultConfig() component.Config {
	srv := confighttp.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	// A slow client may not hold a connection open for long before it says
	// what it wants.
	srv.ReadHeaderTimeout = 10 * time.Second
	return &Config{
		ServerConfig:     srv,
		Enforcer:         enforcerextension.DefaultReference(),
		PolicyController: policycontrollerextension.DefaultReference(),
		RefreshInterval:  5 * time.Second,
		Access: AccessConfig{
			Mode:      AuthModeAuto,
			APIConfig: k8sconfig.Default(),
			CacheTTL:  30 * time.Second,
			Audience:  DefaultAudience,
		},
	}
}

// Unmarshal tells a configuration of the page's former auth:: keys where they
// went, rather than confighttp's bare "invalid keys".
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	for _, k := range []string{"mode", "auth_type", "cache_ttl", "audience"} {
		if conf.IsSet("auth::" + k) {
			return fmt.Errorf("auth::%s: the review page's token settings are under access:: (access::%s); auth:: is the HTTP server's authenticator extension", k, k)
		}
	}
	return conf.Unmarshal(c)
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	endpoint := c.NetAddr.Endpoint
	loopback, err := isLoopback(endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("invalid endpoint %q: must be host:port (%w)", endpoint, err))
	}
	switch c.NetAddr.Transport {
	case confignet.TransportTypeTCP, confignet.TransportTypeTCP4, confignet.TransportTypeTCP6:
	default:
		errs = append(errs, fmt.Errorf("invalid transport %q: the page listens on tcp, tcp4 or tcp6", c.NetAddr.Transport))
	}
	if err := enforcerextension.ValidateReference(c.Enforcer); err != nil {
		errs = append(errs, err)
	}
	if err := policycontrollerextension.ValidateReference(c.PolicyController); err != nil {
		errs = append(errs, err)
	}
	if c.RefreshInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("invalid refresh_interval %s: must be at least 100ms", c.RefreshInterval))
	}
	switch c.Access.Mode {
	case AuthModeAuto, AuthModeToken:
	case AuthModeNone:
		if err == nil && !loopback {
			errs = append(errs, fmt.Errorf("invalid access::mode %q with endpoint %q: a page on an address other than loopback must require a token (auto or token)", c.Access.Mode, endpoint))
		}
	default:
		errs = append(errs, fmt.Errorf("invalid access::mode %q: must be one of %s, %s, %s", c.Access.Mode, AuthModeAuto, AuthModeToken, AuthModeNone))
	}
	if err := c.Access.APIConfig.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("access: %w", err))
	}
	if c.Access.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("invalid access::cache_ttl %s: must not be negative", c.Access.CacheTTL))
	}
	if c.Access.Audience == "" {
		errs = append(errs, errors.New("invalid access::audience: must not be empty (the chart's default is "+DefaultAudience+")"))
	}
	return errors.Join(errs...)
}

// requiresToken reports whether requests must carry a reviewed token.
func (c *Config) requiresToken() bool {
	switch c.Access.Mode {
	case AuthModeToken:
		return true
	case AuthModeNone:
		return false
	case AuthModeAuto: // a token off loopback only
	}
	loopback, err := isLoopback(c.NetAddr.Endpoint)
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
