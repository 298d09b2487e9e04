package reviewextension

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// server is the extension: an HTTP server of the review page.
type server struct {
	cfg *Config
	set extension.Settings
	// restConfig is the test seam: it builds the configuration of the API
	// server that reviews tokens.
	restConfig func(k8sconfig.APIConfig) (*rest.Config, error)

	enforcer reader
	auth     *authenticator // nil when no token is required
	static   *staticFiles
	pages    *pages

	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

func newServer(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error)) *server {
	return &server{cfg: cfg, set: set, restConfig: rc}
}

// Start finds the enforcer and policy controller extensions and listens, with TLS when the
// configuration has a tls section.
func (s *server) Start(ctx context.Context, host component.Host) error {
	e, err := enforcerextension.Find[reader](host, s.cfg.Enforcer)
	if err != nil {
		return err
	}
	s.enforcer = e
	renderer, err := policycontrollerextension.Find[policycontrollerextension.Renderer](host, s.cfg.PolicyController)
	if err != nil {
		return err
	}
	if s.cfg.requiresToken() {
		rc, err := s.restConfig(s.cfg.Access.APIConfig)
		if err != nil {
			return fmt.Errorf("kubernetes client for token reviews (access::auth_type %s): %w", s.cfg.Access.AuthType, err)
		}
		rc = rest.CopyConfig(rc)
		rc.UserAgent = "network-enforcer-review"
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		s.auth = newAuthenticator(cs, s.cfg.Access.CacheTTL, s.cfg.Access.Audience)
	}
	if s.static, err = newStaticFiles(); err != nil {
		return err
	}
	if s.pages, err = newPages(e, renderer, s.cfg.RefreshInterval, s.auth != nil, s.cfg.Access.Audience, s.static); err != nil {
		return err
	}
	ln, err := s.cfg.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("review page on %s: %w", s.cfg.NetAddr.Endpoint, err)
	}
	srv, err := s.cfg.ToServer(ctx, host.GetExtensions(), s.set.TelemetrySettings, s.handler())
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("review page on %s: %w", s.cfg.NetAddr.Endpoint, err)
	}
	s.srv, s.addr = srv, ln.Addr()
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.set.Logger.Error("The review page stopped", zap.Error(err))
		}
	}()
	s.set.Logger.Info("Serving the review page", zap.String("url", s.url()),
		zap.Bool("token_required", s.auth != nil), zap.Bool("tls", s.cfg.TLS.HasValue()))
	return nil
}

// url is the page's address, as a reader opens it.
func (s *server) url() string {
	scheme := "http"
	if s.cfg.TLS.HasValue() {
		scheme = "https"
	}
	return scheme + "://" + s.addr.String() + "/"
}

// Shutdown stops the server, letting requests in flight finish.
func (s *server) Shutdown(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
