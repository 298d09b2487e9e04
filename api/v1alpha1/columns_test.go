package v1alpha1_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestKubectlNamesAndColumns checks what `kubectl get wnp` and `kubectl get wnpp`
// show: the short names resolve, and the table has the documented columns.
func TestKubectlNamesAndColumns(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()

	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	shortNames := map[string][]string{}
	for _, r := range list.APIResources {
		if r.Namespaced && len(r.ShortNames) > 0 {
			shortNames[r.Name] = r.ShortNames
		}
	}
	wantShort := map[string][]string{
		"workloadnetworkpolicies":        {"wnp"},
		"workloadnetworkpolicyproposals": {"wnpp"},
	}
	if !reflect.DeepEqual(shortNames, wantShort) {
		t.Errorf("short names = %v, want %v", shortNames, wantShort)
	}

	proposal := newProposal(ns, "deployment-web-ingress", kubernetesSpec())
	policy := newPolicy(ns, "deployment-web-ingress", istioSpec())
	policy.Annotations = map[string]string{v1alpha1.RevisionAnnotation: "3"}
	if err := env.Client.Create(ctx, proposal); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	// What kubectl get wnpp shows at a glance: a proposal not safe to protect.
	proposal.Status.ObservedEdges, proposal.Status.WouldBlockEdges = 3, 2
	// An amendment names the policy that it amends.
	proposal.Status.Amendment = &v1alpha1.AmendmentStatus{Policy: "deployment-web-ingress", Since: metav1.Now(), LearnedRevisionEdges: 1}
	proposal.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStable, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonLearning, Message: "learning", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, proposal); err != nil {
		t.Fatal(err)
	}

	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	table := func(resource string) *metav1.Table {
		t.Helper()
		raw, err := cs.RESTClient().Get().
			AbsPath("/apis", v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "namespaces", ns, resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
			DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tbl := &metav1.Table{}
		if err := json.Unmarshal(raw, tbl); err != nil {
			t.Fatal(err)
		}
		if len(tbl.Rows) != 1 {
			t.Fatalf("%s: %d rows, want 1", resource, len(tbl.Rows))
		}
		return tbl
	}
	check := func(resource string, want map[string]any) {
		t.Helper()
		tbl := table(resource)
		got := map[string]any{}
		var names []string
		for i, col := range tbl.ColumnDefinitions {
			names = append(names, col.Name)
			if _, ok := want[col.Name]; ok {
				got[col.Name] = tbl.Rows[0].Cells[i]
			}
		}
		if !slices.Contains(names, "Age") {
			t.Errorf("%s: columns %v lack Age", resource, names)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: columns %v, cells %v, want %v", resource, names, got, want)
		}
	}
	check("workloadnetworkpolicyproposals", map[string]any{
		"Name": "deployment-web-ingress", "Backend": "kubernetes", "Direction": "Ingress", "Target": "web",
		"Observed": float64(3), "Would Block": float64(2), "Stable": "False", "Estimated": false,
		"Amends": "deployment-web-ingress", "Learned Rev": float64(1),
	})
	check("workloadnetworkpolicies", map[string]any{
		"Name": "deployment-web-ingress", "Mode": "monitor", "Revision": "3", "Backend": "istio", "Active Violations": nil, "Would Block": nil, "Estimated": nil,
	})
}
