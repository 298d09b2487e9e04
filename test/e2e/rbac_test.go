package e2e

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// chartNamespace is where the RBAC test installs the chart's objects.
const chartNamespace = "network-enforcer"

// TestJourneyAsTheChartServiceAccount runs the Cilium journey with the built
// binary authenticated as the chart's ServiceAccount, bound only to the Roles
// and ClusterRoles that the chart renders: learning, promotion, rendering, the
// status sync and the acknowledgement all work with exactly those grants.
func TestJourneyAsTheChartServiceAccount(t *testing.T) {
	controlplanetest.Require(t)
	charttest.Require(t)
	objs, err := charttest.Render(context.Background(), "network-enforcer", chartNamespace, map[string]any{
		"controller": map[string]any{"provider": map[string]any{"name": "cilium"}},
		"telemetry":  map[string]any{"collectorStrategy": "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	sa := applyRBAC(t, objs)
	resetGuarded(t)
	t.Cleanup(func() { resetGuarded(t) })
	// The chart's Lease: the Role grants renewing that one.
	journey(t, newCilium(t), journeyRun{name: "rbac", receiver: "hubble", leaseNamespace: chartNamespace, leaseName: "network-enforcer",
		kubeconfig: impersonating(t, "system:serviceaccount:"+chartNamespace+":"+sa, chartNamespace)})
}

// applyRBAC creates the chart's ServiceAccount, Roles, ClusterRoles and their
// bindings, deletes them when the test ends, and returns the ServiceAccount's
// name.
func applyRBAC(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	ctx := context.Background()
	var sa string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			sa = o.GetName()
		case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
		default:
			continue
		}
		if ns := o.GetNamespace(); ns != "" {
			err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		must(t, env.Client.Create(ctx, o))
		t.Cleanup(func() { _ = env.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)) })
	}
	if sa == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	return sa
}

// impersonating writes a kubeconfig for the test control plane that acts as
// user, in the groups that the API server gives a ServiceAccount of namespace.
func impersonating(t *testing.T, user, namespace string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, env.WriteKubeconfig(path))
	cfg, err := clientcmd.LoadFromFile(path)
	must(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	}
	must(t, clientcmd.WriteToFile(*cfg, path))
	return path
}
