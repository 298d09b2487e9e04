// Package controlplanetest starts a real Kubernetes control plane for tests: etcd and
// kube-apiserver through controller-runtime's envtest, with the project's CRDs and
// admission policies and Istio's AuthorizationPolicy CRD installed, and optionally
// kube-controller-manager running the garbage collector. The binaries come from
// hack/controlplane.sh, which builds them from Go modules into a versioned cache
// folder.
package controlplanetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// Options choose what runs besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager starts kube-controller-manager with the garbage collector,
	// for tests of deletion through owner references.
	ControllerManager bool
	// WithoutIstio leaves Istio's AuthorizationPolicy CRD out, as in a cluster
	// without Istio (Calico, Cilium).
	WithoutIstio bool
	// WithoutCilium leaves Cilium's CiliumNetworkPolicy CRD out, as in a
	// cluster without Cilium.
	WithoutCilium bool
}

// controlPlaneStartTimeout bounds each try of envtest to start etcd and
// kube-apiserver, unless $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT says.
const controlPlaneStartTimeout = 90 * time.Second

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Client is a controller-runtime client on Config that knows the core,
	// Network Enforcer and Istio security types.
	Client client.Client
	// Scheme is the scheme of Client.
	Scheme *runtime.Scheme

	env *envtest.Environment
	kcm *controllerManager
	dir string
}

// Start starts a control plane for the test and stops it when the test ends,
// whether it passed or failed. When the control plane is not built, it skips the
// test, or fails it under RequireAllVar (see Require).
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	Require(t)
	e, err := New(opts)
	if err != nil {
		t.Fatalf("starting the test control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the test control plane: %v", err)
		}
	})
	return e
}

// New starts a control plane. The caller must call Stop, also when it fails;
// TestMain is the place for a control plane that a whole package shares. When the
// control plane is not built, the error is a *MissingError (see SkipPackage).
func New(opts Options) (_ *Env, err error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := AssetsDir(root)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, securityv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	if !opts.WithoutIstio {
		crd, err := IstioCRD(root, AuthorizationPolicyCRD)
		if err != nil {
			return nil, fmt.Errorf("the istio AuthorizationPolicy CRD: %w", err)
		}
		crds = append(crds, crd)
	}
	if !opts.WithoutCilium {
		crd, err := CiliumCRD(root, "ciliumnetworkpolicies")
		if err != nil {
			return nil, fmt.Errorf("the CiliumNetworkPolicy CRD: %w", err)
		}
		crds = append(crds, crd)
	}

	sweepStale()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	e := &Env{Scheme: scheme, dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()

	for _, sub := range []string{"bin", "etcd", "kube-apiserver"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	// etcd and kube-apiserver end with the test process even when it is killed
	// before it can stop them (see testproc).
	etcd, err := testproc.Tether(filepath.Join(dir, "bin"), filepath.Join(assets, "etcd"))
	if err != nil {
		return nil, err
	}
	apiServer, err := testproc.Tether(filepath.Join(dir, "bin"), filepath.Join(assets, "kube-apiserver"))
	if err != nil {
		return nil, err
	}
	e.env = &envtest.Environment{
		// Their files too are in dir, which Stop removes, or else the next
		// control plane once this process is gone (see sweepStale).
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Path: etcd, DataDir: filepath.Join(dir, "etcd")},
			APIServer: &envtest.APIServer{Path: apiServer, CertDir: filepath.Join(dir, "kube-apiserver")},
		},
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "chart", "crds")},
		CRDs:                  crds,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		// envtest's 20 s per try is short on a machine that runs the unit,
		// race and real-node suites side by side: kube-apiserver then took
		// longer five times over, and the package failed without a test.
		e.env.ControlPlaneStartTimeout = controlPlaneStartTimeout
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if err = InstallManifest(e.Client, filepath.Join(root, AdmissionPoliciesFile)); err != nil {
		return nil, fmt.Errorf("installing admission policies: %w", err)
	}
	if opts.ControllerManager {
		if e.kcm, err = startControllerManager(e.env, assets, dir); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Stop stops everything that New started and removes its files. It is safe to call
// on a partly started Env.
func (e *Env) Stop() error {
	var errs []error
	if e.kcm != nil {
		e.kcm.stop()
		e.kcm = nil
	}
	if e.env != nil {
		errs = append(errs, e.env.Stop())
		e.env = nil
	}
	if e.dir != "" {
		errs = append(errs, os.RemoveAll(e.dir))
		e.dir = ""
	}
	return errors.Join(errs...)
}

// ClientAs returns a client that acts as the given user and groups, through
// impersonation, so that RBAC and admission see that user.
func (e *Env) ClientAs(user string, groups ...string) (client.Client, error) {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return client.New(cfg, client.Options{Scheme: e.Scheme})
}
