package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/tools/crddocs/unwrap"
)

// TestExplainReadsAsSentences: every description that `kubectl explain`
// prints from the CRDs keeps each paragraph on one line, so no sentence is
// broken where a Go comment happened to wrap.
func TestExplainReadsAsSentences(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "chart", "crds", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			checkDescriptions(t, crd.Spec.Names.Singular, v.Schema.OpenAPIV3Schema)
		}
	}
}

func checkDescriptions(t *testing.T, path string, s *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	if s == nil {
		return
	}
	if line, wrapped := unwrap.Wrapped(s.Description); wrapped {
		t.Errorf("%s: kubectl explain breaks a sentence before %q; run make generate", path, line)
	}
	for name, p := range s.Properties {
		checkDescriptions(t, path+"."+name, &p)
	}
	if s.Items != nil {
		checkDescriptions(t, path+"[]", s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		checkDescriptions(t, path+"{}", s.AdditionalProperties.Schema)
	}
}
