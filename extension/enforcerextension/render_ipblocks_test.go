package enforcerextension

import (
	"testing"

	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// TestAuthorizationPolicyIPBlocks: a source's ipBlocks reach the
// AuthorizationPolicy's source.ipBlocks.
func TestAuthorizationPolicyIPBlocks(t *testing.T) {
	p := istioPolicy("shop", "deployment-cart-ingress", v1alpha1.PolicyModeProtect)
	p.Spec.Istio.Rules[0].From = append(p.Spec.Istio.Rules[0].From,
		v1alpha1.IstioFrom{Source: v1alpha1.IstioSource{IPBlocks: []string{"203.0.113.7/32", "2001:db8::/64"}}})
	ap, err := authorizationPolicies{}.desired(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &securityv1beta1.Source{IpBlocks: []string{"203.0.113.7/32", "2001:db8::/64"}}
	if from := ap.Spec.Rules[0].From; len(from) != 2 || !proto.Equal(from[1].Source, want) {
		t.Fatalf("from %v", from)
	}
}
