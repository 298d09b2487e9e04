package secretprovider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

func TestScheme(t *testing.T) {
	p := NewFactory().Create(confmaptest.NewNopProviderSettings())
	if err := confmaptest.ValidateProviderScheme(p); err != nil {
		t.Fatal(err)
	}
	if p.Scheme() != "secret" {
		t.Fatalf("scheme %q, want secret", p.Scheme())
	}
}

// TestRetrieveKeysOfOneSecret: three keys of one Secret resolve to their values
// with one GET and no list or watch; a value that reads as a YAML number stays a
// string; no value reaches the log; closing the Retrieved values (what the
// resolver does before it resolves again) makes the next Retrieve read anew.
func TestRetrieveKeysOfOneSecret(t *testing.T) {
	controlplanetest.Require(t)
	ns := "retrieve-keys"
	createNamespace(t, ns)
	data := map[string]string{"port": "8080"}
	for k, v := range tlsData {
		data[k] = v
	}
	secret := createSecret(t, ns, "hubble-relay-client-certs", data)

	var log requestLog
	var builds atomic.Int32
	core, logs := observer.New(zapcore.DebugLevel)
	p := newProvider(zap.New(core), testClient(t, env.Config, &log, &builds))
	ctx := context.Background()

	var retrieved []*confmap.Retrieved
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key", "port"} {
		ret, err := p.Retrieve(ctx, "secret:"+ns+"/hubble-relay-client-certs/"+key, nil)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		raw, err := ret.AsRaw()
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := raw.(string); !ok || s != data[key] {
			t.Fatalf("%s: got %#v (%T), want the string %q", key, raw, raw, data[key])
		}
		retrieved = append(retrieved, ret)
	}
	wantGet := "GET /api/v1/namespaces/" + ns + "/secrets/hubble-relay-client-certs"
	if got := log.requests(); !slices.Equal(got, []string{wantGet}) {
		t.Fatalf("requests %q, want only %q", got, wantGet)
	}
	if builds.Load() != 1 {
		t.Fatalf("client built %d times, want once", builds.Load())
	}

	if logs.Len() == 0 {
		t.Fatal("no debug log of the read: the check for leaked values would prove nothing")
	}
	for _, entry := range logs.All() {
		text := entry.Message + " " + fmt.Sprint(entry.ContextMap())
		for k, v := range tlsData {
			// The middle line alone is enough to leak the material.
			if strings.Contains(text, strings.Split(v, "\n")[1]) {
				t.Fatalf("the value of %s was logged: %s", k, text)
			}
		}
	}

	// A rotated certificate: the resolver closes what it retrieved before it
	// resolves again, and the provider then reads the Secret anew.
	secret.Data["ca.crt"] = []byte("rotated")
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for _, ret := range retrieved {
		if err := ret.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ret, err := p.Retrieve(ctx, "secret:"+ns+"/hubble-relay-client-certs/ca.crt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := ret.AsRaw(); raw != "rotated" {
		t.Fatalf("after Close: got %#v, want the rotated value", raw)
	}
	if got := log.requests(); !slices.Equal(got, []string{wantGet, wantGet}) {
		t.Fatalf("requests %q, want two GETs of the secret", got)
	}
	if builds.Load() != 1 {
		t.Fatalf("client built %d times, want once per provider", builds.Load())
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRetrieveMissing: a missing key or Secret fails naming namespace, name and
// key, and never shows a value.
func TestRetrieveMissing(t *testing.T) {
	controlplanetest.Require(t)
	ns := "retrieve-missing"
	createNamespace(t, ns)
	createSecret(t, ns, "certs", tlsData)
	var log requestLog
	var builds atomic.Int32
	p := newProvider(zap.NewNop(), testClient(t, env.Config, &log, &builds))
	ctx := context.Background()

	_, err := p.Retrieve(ctx, "secret:"+ns+"/certs/ca.pem", nil)
	if err == nil {
		t.Fatal("a missing key resolved")
	}
	want := `secret:retrieve-missing/certs/ca.pem: secret retrieve-missing/certs has no key "ca.pem" (keys: ca.crt, tls.crt, tls.key)`
	if err.Error() != want {
		t.Fatalf("missing key: got error %q, want %q", err, want)
	}

	_, err = p.Retrieve(ctx, "secret:"+ns+"/nosuch/ca.crt", nil)
	if err == nil {
		t.Fatal("a missing secret resolved")
	}
	want = "secret:retrieve-missing/nosuch/ca.crt: secret retrieve-missing/nosuch not found"
	if err.Error() != want {
		t.Fatalf("missing secret: got error %q, want %q", err, want)
	}
	// A failed read is not cached: the Secret may be created before a reload.
	createSecret(t, ns, "nosuch", map[string]string{"ca.crt": "now here"})
	ret, err := p.Retrieve(ctx, "secret:"+ns+"/nosuch/ca.crt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := ret.AsRaw(); raw != "now here" {
		t.Fatalf("got %#v after creating the secret", raw)
	}
}

// TestRetrieveInvalidURI: a URI not of the form secret:<namespace>/<name>/<key>
// fails with the expected form, before any client is built.
func TestRetrieveInvalidURI(t *testing.T) {
	p := newProvider(zap.NewNop(), func() (kubernetes.Interface, error) {
		t.Error("a client was built for an invalid URI")
		return nil, errors.New("no client")
	})
	const form = "want secret:<namespace>/<name>/<key>"
	for uri, want := range map[string]string{
		"secret:x":               `invalid secret URI "secret:x": ` + form,
		"secret:ns/name":         `invalid secret URI "secret:ns/name": ` + form,
		"secret:ns/name/key/x":   `invalid secret URI "secret:ns/name/key/x": ` + form,
		"secret:ns//key":         `invalid secret URI "secret:ns//key": ` + form,
		"secret:":                `invalid secret URI "secret:": ` + form,
		"env:HOME":               `invalid secret URI "env:HOME": ` + form,
		"secret:Kube_System/n/k": `invalid secret URI "secret:Kube_System/n/k": ` + form + `: namespace "Kube_System": `,
		"secret:ns/Name!/k":      `invalid secret URI "secret:ns/Name!/k": ` + form + `: name "Name!": `,
		"secret:ns/name/a:b":     `invalid secret URI "secret:ns/name/a:b": ` + form + `: key "a:b": `,
	} {
		_, err := p.Retrieve(context.Background(), uri, nil)
		switch {
		case err == nil:
			t.Errorf("%s resolved", uri)
		case strings.HasSuffix(want, ": ") && !strings.HasPrefix(err.Error(), want):
			t.Errorf("%s: got error %q, want it to start with %q", uri, err, want)
		case !strings.HasSuffix(want, ": ") && err.Error() != want:
			t.Errorf("%s: got error %q, want %q", uri, err, want)
		}
	}
}

// TestRBACGetByNameOnly: a service account whose only grant is get on one
// Secret name reads it (so the provider needs no list or watch) and is refused
// any other Secret with an error that names it.
func TestRBACGetByNameOnly(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	dataPlane, collector := "rbac-data-plane", "rbac-collector"
	createNamespace(t, dataPlane)
	createNamespace(t, collector)
	createSecret(t, dataPlane, "hubble-relay-client-certs", tlsData)
	createSecret(t, dataPlane, "other", tlsData)

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: collector, Name: "network-enforcer"}}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: dataPlane, Name: "network-enforcer-tls"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{"hubble-relay-client-certs"}, Verbs: []string{"get"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: dataPlane, Name: "network-enforcer-tls"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: collector, Name: sa.Name}},
	}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	user := "system:serviceaccount:" + collector + ":" + sa.Name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + collector, "system:authenticated"}
	saConfig := rest.CopyConfig(env.Config)
	saConfig.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}

	// The API server's authorizer learns of new RBAC objects through its
	// informers: wait until the grant is in force, so that the provider's single
	// GET is measured against it.
	saClient := kubernetes.NewForConfigOrDie(saConfig)
	var getErr error
	if !testwait.Try(t, "the grant to take effect", 30*time.Second, func() bool {
		_, getErr = saClient.CoreV1().Secrets(dataPlane).Get(ctx, "hubble-relay-client-certs", metav1.GetOptions{})
		return getErr == nil
	}) {
		t.Fatalf("the grant never took effect: %v", getErr)
	}
	// The grant is as narrow as the chart's: listing is refused, so a provider
	// that listed or watched would fail below.
	saCRClient, err := env.ClientAs(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	if err := saCRClient.List(ctx, &corev1.SecretList{}, client.InNamespace(dataPlane)); !apierrors.IsForbidden(err) {
		t.Fatalf("listing secrets as the service account: got %v, want forbidden", err)
	}

	var log requestLog
	var builds atomic.Int32
	p := newProvider(zap.NewNop(), testClient(t, saConfig, &log, &builds))
	for key, want := range tlsData {
		ret, err := p.Retrieve(ctx, "secret:"+dataPlane+"/hubble-relay-client-certs/"+key, nil)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if raw, _ := ret.AsRaw(); raw != want {
			t.Fatalf("%s: got %#v", key, raw)
		}
	}
	if got, want := log.requests(), []string{"GET /api/v1/namespaces/" + dataPlane + "/secrets/hubble-relay-client-certs"}; !slices.Equal(got, want) {
		t.Fatalf("requests %q, want %q", got, want)
	}

	_, err = p.Retrieve(ctx, "secret:"+dataPlane+"/other/ca.crt", nil)
	if err == nil {
		t.Fatal("read a secret that the service account has no grant for")
	}
	wantPrefix := "secret:rbac-data-plane/other/ca.crt: reading secret rbac-data-plane/other is forbidden; the collector's service account needs get on it: "
	if !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), `cannot get resource "secrets"`) {
		t.Fatalf("got error %q, want it to start with %q and carry the API server's reason", err, wantPrefix)
	}
}

// TestDefaultClientFromKubeconfig: outside a pod, the factory's provider reaches
// the cluster through $KUBECONFIG, and only when it first retrieves.
func TestDefaultClientFromKubeconfig(t *testing.T) {
	controlplanetest.Require(t)
	ns := "default-client"
	createNamespace(t, ns)
	createSecret(t, ns, "certs", tlsData)
	// Not in a pod, even when the tests run in one.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")

	// No usable kubeconfig: creating the provider still works (the collector
	// creates every provider, used or not); retrieving fails.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	p := NewFactory().Create(confmap.ProviderSettings{})
	_, err := p.Retrieve(context.Background(), "secret:"+ns+"/certs/ca.crt", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "secret:"+ns+"/certs/ca.crt: kubernetes client: ") {
		t.Fatalf("without a kubeconfig: got error %v", err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	p = NewFactory().Create(confmap.ProviderSettings{})
	ret, err := p.Retrieve(context.Background(), "secret:"+ns+"/certs/tls.key", nil)
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := ret.AsRaw(); raw != tlsData["tls.key"] {
		t.Fatalf("got %#v", raw)
	}
}
