package reviewextension

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/extension/reviewextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// env is the control plane the package's tests share, holding the fixtures.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	// The enforcer extension reads $KUBECONFIG with auth_type kubeConfig, as
	// it does outside a cluster.
	goleak.VerifyTestMain(controlplanetest.Package(m, controlplanetest.Options{}, &env, func(e *controlplanetest.Env) error {
		if err := e.UseKubeconfig(); err != nil {
			return err
		}
		return createFixtures(context.Background(), e.Client, newFixtures(time.Now()))
	}), componentcheck.LeakOptions()...)
}

// createFixtures writes the fixtures to the API server: each object, then its
// status through the status subresource, as the enforcer's writers do.
func createFixtures(ctx context.Context, c client.Client, f fixtures) error {
	namespaces := map[string]bool{}
	for _, p := range f.proposals {
		namespaces[p.Namespace] = true
	}
	for _, p := range f.policies {
		namespaces[p.Namespace] = true
	}
	for ns := range namespaces {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
	}
	for i := range f.proposals {
		p := f.proposals[i].DeepCopy()
		status := p.Status
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("proposal %s/%s: %w", p.Namespace, p.Name, err)
		}
		p.Status = status
		if err := c.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("proposal %s/%s status: %w", p.Namespace, p.Name, err)
		}
	}
	for i := range f.policies {
		p := f.policies[i].DeepCopy()
		status := p.Status
		if err := c.Create(ctx, p); err != nil {
			return fmt.Errorf("policy %s/%s: %w", p.Namespace, p.Name, err)
		}
		p.Status = status
		if err := c.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("policy %s/%s status: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// host is a collector host with one extension.
type host map[component.ID]component.Component

func (h host) GetExtensions() map[component.ID]component.Component { return h }

// startEnforcer starts the real enforcer extension on the test control plane
// (a standby would do as well: the page reads the cache only) and waits until
// its cache holds the fixtures.
func startEnforcer(t testing.TB, lease string) (reader, component.Host) {
	t.Helper()
	proposals, policies := fixtureCounts()
	r := enforcerextensiontest.StartReplica(t, env.Config, lease, leaderelectorextension.ReplicaName())
	// The policy controller renders the page's native objects (and promotes
	// and renders, as a collector's does).
	pf := policycontrollerextension.NewFactory()
	pc, err := pf.Create(context.Background(), enforcerextensiontest.Settings(component.NewID(pf.Type())), pf.CreateDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(context.Background(), r.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown(context.Background()) })
	r.Ready(t)
	ext := r.Enforcer
	e := ext.(reader)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, _ := e.ListProposals("")
		ws, _ := e.ListPolicies("")
		if len(ps) >= proposals && len(ws) >= policies {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d proposals and %d policies, want %d and %d", len(ps), len(ws), proposals, policies)
		}
		// The poll's own interval, so that the loop does not spin while it
		// waits for the cache.
		time.Sleep(50 * time.Millisecond)
	}
	return e, host{enforcerextension.DefaultReference(): ext, policycontrollerextension.DefaultReference(): pc}
}

// startReview starts the review page on a free loopback port, with mode, its
// token reviews going to the test control plane, and returns its URL.
func startReview(t testing.TB, h component.Host, mode AuthMode) string {
	t.Helper()
	return startReviewWith(t, h, func(c *Config) { c.Access.Mode = mode })
}

// startReviewWith is startReview with the configuration that configure makes
// of the defaults on a free loopback port.
func startReviewWith(t testing.TB, h component.Host, configure func(*Config)) string {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint, cfg.RefreshInterval = "127.0.0.1:0", 500*time.Millisecond
	configure(cfg)
	s := newServer(extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: componenttest.NewNopTelemetrySettings()}, cfg,
		func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil })
	if err := s.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return strings.TrimSuffix(s.url(), "/")
}

// fixtureCounts is how many proposals and policies newFixtures makes.
func fixtureCounts() (int, int) {
	f := newFixtures(time.Now())
	return len(f.proposals), len(f.policies)
}
