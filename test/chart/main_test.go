// Package chart tests the Helm chart: helm lint, the objects and collector
// configurations that each provider, TLS mode and collector strategy renders,
// every object applied with a server-side dry run to the real test control plane
// (with cert-manager's and Istio's CRDs), every collector configuration checked
// by the built binary, and the values the schema refuses.
package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// The release the tests render.
const (
	release   = "ne"
	namespace = "network-enforcer"
	fullname  = "ne-network-enforcer"
)

// Namespaces that the rendered objects live in besides the release's (and
// kube-system, which the API server makes): Calico's.
var extraNamespaces = []string{"calico-system", "tigera-operator"}

// certManagerModule ships cert-manager's CRDs as plain YAML; it is only
// downloaded for them, never imported, so its version is free of ours.
const (
	certManagerModule = "github.com/cert-manager/cert-manager@v1.21.2"
	certManagerCRDDir = "deploy/crds"
)

// The cert-manager kinds that the chart renders, and their CRD files.
var certManagerCRDs = []string{
	"cert-manager.io_issuers.yaml",
	"cert-manager.io_clusterissuers.yaml",
	"cert-manager.io_certificates.yaml",
	"cert-manager.io_certificaterequests.yaml",
}

var env *controlplanetest.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	env, err = controlplanetest.New(controlplanetest.Options{})
	if err == nil {
		err = installCertManagerCRDs(env)
	}
	if err == nil {
		err = createNamespaces(env.Client, append([]string{namespace}, extraNamespaces...))
	}
	return controlplanetest.RunPackage(m, &env, err)
}

// installCertManagerCRDs creates cert-manager's CRDs from its module and waits
// until the API server serves them.
func installCertManagerCRDs(e *controlplanetest.Env) error {
	dir, err := moduleDir(certManagerModule)
	if err != nil {
		return err
	}
	var names []string
	for _, file := range certManagerCRDs {
		objs, err := controlplanetest.ReadManifest(filepath.Join(dir, certManagerCRDDir, file))
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if obj.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s holds a %s", file, obj.GetKind())
			}
			if err := e.Client.Create(context.Background(), obj); err != nil {
				return fmt.Errorf("CRD %s: %w", obj.GetName(), err)
			}
			names = append(names, obj.GetName())
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range names {
		for {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			if err := e.Client.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
				return err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
				return err
			}
			if established(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established after 30s", name)
			}
			// The poll's own interval, so that the loop does not spin while it
			// waits for the CRD.
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// moduleDir downloads module@version into the module cache and returns its
// folder. It runs outside the repository, so that go.mod and go.sum stay as
// they are.
func moduleDir(moduleAtVersion string) (string, error) {
	tmp, err := os.MkdirTemp("", "network-enforcer-moddownload-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	return controlplanetest.ModuleDir(tmp, moduleAtVersion)
}

func createNamespaces(c client.Client, names []string) error {
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
	}
	return nil
}

// dryRun sends each object to the API server as a create with a server-side dry
// run and strict field validation, so that the server's validation, defaulting
// and admission judge it and nothing is stored. An object that exists already
// (the admission policies, which the test control plane installs) is sent as
// a dry-run update instead.
func dryRun(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	controlplanetest.Require(t)
	ctx := context.Background()
	for _, o := range objs {
		obj := o.DeepCopy()
		what := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		err := env.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
		if apierrors.IsAlreadyExists(err) {
			existing := &unstructured.Unstructured{}
			existing.SetGroupVersionKind(obj.GroupVersionKind())
			if err = env.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
				obj.SetResourceVersion(existing.GetResourceVersion())
				err = env.Client.Update(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
			}
		}
		if err != nil {
			t.Errorf("%s refused by the API server: %v", what, err)
		}
	}
}
