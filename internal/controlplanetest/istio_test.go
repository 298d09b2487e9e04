package controlplanetest

import (
	"testing"
)

// TestIstioCRD: the CRD is taken from the istio.io/api module that go.mod
// selects, and only the one asked for.
func TestIstioCRD(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crd, err := IstioCRD(root, AuthorizationPolicyCRD)
	if err != nil {
		t.Fatal(err)
	}
	if crd.Name != AuthorizationPolicyCRD || crd.Spec.Group != "security.istio.io" ||
		crd.Spec.Names.Kind != "AuthorizationPolicy" || crd.Spec.Names.Plural != "authorizationpolicies" {
		t.Fatalf("CRD %s: group %s, names %+v", crd.Name, crd.Spec.Group, crd.Spec.Names)
	}
	served := false
	for _, v := range crd.Spec.Versions {
		served = served || (v.Name == "v1" && v.Served && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil)
	}
	if !served {
		t.Fatal("the CRD does not serve security.istio.io/v1 with a schema")
	}
	if _, err := IstioCRD(root, "nosuchkinds.security.istio.io"); err == nil {
		t.Fatal("a CRD that the file does not hold was found")
	}
}
