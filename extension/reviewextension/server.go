package reviewextension

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
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
	pages    *pages

	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

func newServer(set extension.Settings, cfg *Config, rc func(k8sconfig.APIConfig) (*rest.Config, error)) *server {
	return &server{cfg: cfg, set: set, restConfig: rc}
}

// Start finds the enforcer extension and listens.
func (s *server) Start(_ context.Context, host component.Host) error {
	e, err := enforcerextension.Find[reader](host, s.cfg.Enforcer)
	if err != nil {
		return err
	}
	s.enforcer = e
	if s.cfg.requiresToken() {
		rc, err := s.restConfig(s.cfg.Auth.APIConfig)
		if err != nil {
			return fmt.Errorf("kubernetes client for token reviews (auth::auth_type %s): %w", s.cfg.Auth.AuthType, err)
		}
		rc = rest.CopyConfig(rc)
		rc.UserAgent = "network-enforcer-review"
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		s.auth = newAuthenticator(cs, s.cfg.Auth.CacheTTL)
	}
	if s.pages, err = newPages(e, s.cfg.RefreshInterval, s.auth != nil); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Endpoint)
	if err != nil {
		return fmt.Errorf("review page on %s: %w", s.cfg.Endpoint, err)
	}
	s.addr = ln.Addr()
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.set.Logger.Error("The review page stopped", zap.Error(err))
		}
	}()
	s.set.Logger.Info("Serving the review page", zap.String("url", "http://"+s.addr.String()+"/"),
		zap.Bool("token_required", s.auth != nil))
	return nil
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
