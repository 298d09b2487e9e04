// Package secretprovider is a confmap provider that reads one key of a
// Kubernetes Secret by name, with URIs of the form
// secret:<namespace>/<name>/<key>. It lets the collector configuration take TLS
// material from a Secret in another namespace, which a pod cannot mount: the
// service account needs only `get` on that one Secret name.
package secretprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	schemeName = "secret"
	// uriForm is the URI form that errors about a bad URI show.
	uriForm = schemeName + ":<namespace>/<name>/<key>"
	// getTimeout bounds each GET, so that an unreachable API server fails the
	// collector's start with an error instead of hanging it.
	getTimeout = 10 * time.Second
)

// NewFactory returns a factory for a confmap.Provider with the scheme "secret",
// which resolves secret:<namespace>/<name>/<key> to the value of key in the
// Secret namespace/name, as a string.
//
// The provider reaches the API server with the in-cluster configuration when it
// runs in a pod, else with the kubeconfig that $KUBECONFIG (or the default
// location) names. It reads each Secret with a single GET, never a list or a
// watch, so RBAC `get` on the Secret's name is all it needs.
func NewFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(set confmap.ProviderSettings) confmap.Provider {
		return newProvider(set.Logger, defaultClient)
	})
}

// secretRef names a Secret.
type secretRef struct{ namespace, name string }

func (r secretRef) String() string { return r.namespace + "/" + r.name }

// provider implements confmap.Provider.
type provider struct {
	logger *zap.Logger
	// newClient builds the Kubernetes client; tests replace it to reach a test
	// API server and to count requests.
	newClient func() (kubernetes.Interface, error)

	mu sync.Mutex
	// clientOnce builds the client on the first Retrieve rather than in the
	// factory: the collector creates every provider (also to learn its scheme)
	// whether or not the configuration uses it, and a collector without a
	// secret: URI must not need a cluster.
	clientOnce sync.Once
	client     kubernetes.Interface
	clientErr  error
	// secrets caches the data of each Secret read during the current
	// resolution, so that several keys of one Secret cost one GET. The
	// resolver closes every Retrieved before it resolves again (a SIGHUP
	// reload), and closing drops the cache, so a reload reads the Secrets anew.
	secrets map[secretRef]map[string][]byte
}

// newProvider returns a provider that builds its client with newClient on the
// first Retrieve.
func newProvider(logger *zap.Logger, newClient func() (kubernetes.Interface, error)) *provider {
	if logger == nil {
		// The collector creates providers with empty settings just to ask for
		// their scheme.
		logger = zap.NewNop()
	}
	return &provider{logger: logger, newClient: newClient, secrets: map[secretRef]map[string][]byte{}}
}

// Retrieve returns the value of the key that uri names, as a string. It never
// logs or returns the value in an error.
func (p *provider) Retrieve(ctx context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	ref, key, err := parseURI(uri)
	if err != nil {
		return nil, err
	}
	data, err := p.secretData(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	value, ok := data[key]
	if !ok {
		// Key names are not secret; listing them makes a typo easy to spot.
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("%s: secret %s has no key %q (keys: %s)", uri, ref, key, strings.Join(keys, ", "))
	}
	// A plain string, not YAML: a PEM block or a token must substitute verbatim,
	// also when it happens to parse as a number or a map.
	return confmap.NewRetrieved(string(value), confmap.WithRetrievedClose(p.dropCache))
}

// Scheme returns "secret".
func (*provider) Scheme() string { return schemeName }

// Shutdown drops the cached Secret data.
func (p *provider) Shutdown(context.Context) error {
	return p.dropCache(context.Background())
}

// dropCache forgets the Secrets read so far, so that the next resolution reads
// them again.
func (p *provider) dropCache(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.secrets)
	return nil
}

// secretData returns the data of the Secret ref, from the cache or with one GET.
func (p *provider) secretData(ctx context.Context, ref secretRef) (map[string][]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if data, ok := p.secrets[ref]; ok {
		return data, nil
	}
	p.clientOnce.Do(func() {
		p.client, p.clientErr = p.newClient()
		if p.clientErr != nil {
			p.clientErr = fmt.Errorf("kubernetes client: %w", p.clientErr)
		}
	})
	if p.clientErr != nil {
		return nil, p.clientErr
	}

	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	// Only the Secret's name is logged: never its data.
	p.logger.Debug("Reading secret for the configuration", zap.String("namespace", ref.namespace), zap.String("name", ref.name))
	secret, err := p.client.CoreV1().Secrets(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("secret %s not found", ref)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading secret %s is forbidden; the collector's service account needs get on it: %w", ref, err)
	case err != nil:
		return nil, fmt.Errorf("reading secret %s: %w", ref, err)
	}
	data := secret.Data
	if data == nil {
		data = map[string][]byte{}
	}
	p.secrets[ref] = data
	return data, nil
}

// parseURI splits secret:<namespace>/<name>/<key>, checking each part as the API
// server would, so that a bad URI fails with its own message rather than as a
// puzzling request.
func parseURI(uri string) (secretRef, string, error) {
	invalid := func(reason string) error {
		msg := fmt.Sprintf("invalid secret URI %q: want %s", uri, uriForm)
		if reason != "" {
			msg += ": " + reason
		}
		return errors.New(msg)
	}
	opaque, ok := strings.CutPrefix(uri, schemeName+":")
	if !ok {
		return secretRef{}, "", invalid("")
	}
	parts := strings.Split(opaque, "/")
	if len(parts) != 3 || slices.Contains(parts, "") {
		return secretRef{}, "", invalid("")
	}
	namespace, name, key := parts[0], parts[1], parts[2]
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return secretRef{}, "", invalid(fmt.Sprintf("namespace %q: %s", namespace, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return secretRef{}, "", invalid(fmt.Sprintf("name %q: %s", name, strings.Join(errs, "; ")))
	}
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		return secretRef{}, "", invalid(fmt.Sprintf("key %q: %s", key, strings.Join(errs, "; ")))
	}
	return secretRef{namespace: namespace, name: name}, key, nil
}

// defaultClient uses the in-cluster configuration in a pod, else the kubeconfig
// of the default loading rules ($KUBECONFIG, else the default location), so the
// provider also works outside a cluster.
func defaultClient() (kubernetes.Interface, error) {
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
