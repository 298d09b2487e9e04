package secretprovider

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestResolver: through confmap's resolver, as the collector resolves its
// configuration, ${secret:...} resolves inside map values (whole or embedded in
// a longer string) beside ${env:...}, with one GET per Secret per resolution;
// resolving again (a reload) reads the Secret anew.
func TestResolver(t *testing.T) {
	controlplanetest.Require(t)
	ns := "resolver"
	createNamespace(t, ns)
	secret := createSecret(t, ns, "hubble-relay-client-certs", tlsData)
	createSecret(t, ns, "token", map[string]string{"token": "s3cr3t", "port": "4245"})
	t.Setenv("RELAY_ENDPOINT", "hubble-relay.kube-system:443")

	const config = `
receivers:
  hubble:
    relay:
      endpoint: ${env:RELAY_ENDPOINT}
      tls:
        ca_pem: ${secret:resolver/hubble-relay-client-certs/ca.crt}
        cert_pem: ${secret:resolver/hubble-relay-client-certs/tls.crt}
        key_pem: "${secret:resolver/hubble-relay-client-certs/tls.key}"
      headers:
        authorization: "Bearer ${secret:resolver/token/token}"
    port: ${secret:resolver/token/port}
`
	var log requestLog
	var builds atomic.Int32
	secretFactory := confmap.NewProviderFactory(func(set confmap.ProviderSettings) confmap.Provider {
		return newProvider(set.Logger, testClient(t, env.Config, &log, &builds))
	})
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"yaml:" + config},
		ProviderFactories: []confmap.ProviderFactory{secretFactory, envprovider.NewFactory(), yamlprovider.NewFactory()},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = resolver.Shutdown(ctx) })

	check := func(wantCA string) {
		t.Helper()
		conf, err := resolver.Resolve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]any{
			"receivers::hubble::relay::endpoint":               "hubble-relay.kube-system:443",
			"receivers::hubble::relay::tls::ca_pem":            wantCA,
			"receivers::hubble::relay::tls::cert_pem":          tlsData["tls.crt"],
			"receivers::hubble::relay::tls::key_pem":           tlsData["tls.key"],
			"receivers::hubble::relay::headers::authorization": "Bearer s3cr3t",
			// A Secret value is a string, even where it reads as a number.
			"receivers::hubble::port": "4245",
		} {
			if got := conf.Get(key); got != want {
				t.Errorf("%s: got %#v (%T), want %#v", key, got, got, want)
			}
		}
	}
	check(tlsData["ca.crt"])
	want := []string{
		"GET /api/v1/namespaces/resolver/secrets/hubble-relay-client-certs",
		"GET /api/v1/namespaces/resolver/secrets/token",
	}
	// The resolver walks maps in no fixed order.
	sorted := func(s []string) []string { slices.Sort(s); return s }
	if got := log.requests(); !slices.Equal(sorted(got), want) {
		t.Fatalf("requests %q, want %q", got, want)
	}

	secret.Data["ca.crt"] = []byte("rotated")
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	check("rotated")
	if got := log.requests(); len(got) != 4 || !slices.Equal(sorted(got[2:]), want) {
		t.Fatalf("requests after resolving again %q, want %q twice", got, want)
	}
	if builds.Load() != 1 {
		t.Fatalf("client built %d times, want once", builds.Load())
	}
}
