package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestServesResource: discovery on the test control plane, which has Istio's
// AuthorizationPolicy CRD and no other Istio CRD.
func TestServesResource(t *testing.T) {
	controlplanetest.Require(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    schema.GroupVersionResource
		want bool
	}{
		{AuthorizationPolicyResource, true},
		{schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, true},
		// The group version is served, the resource is not.
		{schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "peerauthentications"}, false},
		// The group version is not served at all.
		{schema.GroupVersionResource{Group: "security.istio.io", Version: "v2", Resource: "authorizationpolicies"}, false},
		{schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}, false},
	} {
		got, err := servesResource(cs.Discovery(), tc.r)
		if err != nil {
			t.Fatalf("%s: %v", tc.r, err)
		}
		if got != tc.want {
			t.Errorf("servesResource(%s) = %v, want %v", tc.r, got, tc.want)
		}
	}
}
