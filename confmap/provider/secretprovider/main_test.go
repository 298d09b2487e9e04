package secretprovider

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/internal/componentcheck"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane the package's tests share.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(controlplanetest.Package(m, controlplanetest.Options{}, &env, nil), componentcheck.LeakOptions()...)
}

// requestLog records every request a client sends, as "METHOD path?query", to
// show how many GETs the provider made and that it never listed or watched.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) RoundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req.Method+" "+req.URL.RequestURI())
	l.mu.Unlock()
	return next.RoundTrip(req)
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// testClient is a provider's client seam on cfg: it records the requests in log
// and counts how often the provider built a client in builds.
func testClient(t *testing.T, cfg *rest.Config, log *requestLog, builds *atomic.Int32) func() (kubernetes.Interface, error) {
	t.Helper()
	return func() (kubernetes.Interface, error) {
		builds.Add(1)
		logged := rest.CopyConfig(cfg)
		logged.Wrap(func(next http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) { return log.RoundTrip(next, r) })
		})
		return kubernetes.NewForConfig(logged)
	}
}

// createNamespace creates a namespace for one test, so tests do not see each
// other's Secrets.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, namespace, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// tlsData is the data of a Secret with TLS material, as the data plane's
// client-certificate Secrets hold it.
var tlsData = map[string]string{
	"ca.crt":  "-----BEGIN CERTIFICATE-----\nY2EtY2VydA==\n-----END CERTIFICATE-----\n",
	"tls.crt": "-----BEGIN CERTIFICATE-----\nY2xpZW50LWNlcnQ=\n-----END CERTIFICATE-----\n",
	"tls.key": "-----BEGIN PRIVATE KEY-----\na2V5LW1hdGVyaWFs\n-----END PRIVATE KEY-----\n",
}
