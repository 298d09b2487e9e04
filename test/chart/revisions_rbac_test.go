package chart

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPolicyRevisionsRBAC: the enforcer keeps each policy's revisions as
// ControllerRevisions that it lists by their label, creates and prunes: the
// ClusterRole lets it list them, and of the writes create and delete alone,
// whatever the provider.
func TestPolicyRevisionsRBAC(t *testing.T) {
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "*"}
	for _, provider := range []string{"istio", "calico", "cilium"} {
		r := render(t, vals("controller.provider.name", provider))
		cr := r.must(t, "ClusterRole", "", fullname)
		rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		var verbs []string
		for _, rule := range rules {
			if slices.Contains(list(rule, "apiGroups"), "apps") && slices.Contains(list(rule, "resources"), "controllerrevisions") {
				verbs = append(verbs, list(rule, "verbs")...)
			}
		}
		var written []string
		for _, v := range verbs {
			if slices.Contains(writes, v) {
				written = append(written, v)
			}
		}
		slices.Sort(written)
		if !slices.Contains(verbs, "list") || !slices.Equal(written, []string{"create", "delete"}) {
			t.Errorf("%s: the ClusterRole's verbs on controllerrevisions %v, want list, and of the writes create and delete alone", provider, verbs)
		}
	}
}
