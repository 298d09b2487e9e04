package render

import (
	"testing"

	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

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

// TestAuthorizationPolicyEntities: the istio backend renders spec.outside's
// entities as sources of their addresses, on the entity's ports, after the
// spec's own rules; a DNS name has no source form and is left out.
func TestAuthorizationPolicyEntities(t *testing.T) {
	p := istioPolicy("shop", "deployment-cart-ingress", v1alpha1.PolicyModeProtect)
	p.Spec.Outside = []v1alpha1.OutsidePeer{
		{Entity: v1alpha1.EntityNodes, Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8080))}}},
		{Entity: v1alpha1.EntityAPIServer},
		{DNSName: "api.example.com"},
	}
	n := len(p.Spec.Istio.Rules)
	outside := &outsideAddresses{apiServer: []string{"192.0.2.10/32"}, nodes: []string{"192.0.2.21/32", "192.0.2.22/32"}}
	ap, err := authorizationPolicies{outside: outside}.desired(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ap.Spec.Rules) != n+2 {
		t.Fatalf("%d rules, want the spec's %d and one for each entity", len(ap.Spec.Rules), n)
	}
	nodes := &securityv1beta1.Rule{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{IpBlocks: []string{"192.0.2.21/32", "192.0.2.22/32"}}}},
		To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Ports: []string{"8080"}}}},
	}
	apiServer := &securityv1beta1.Rule{
		From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{IpBlocks: []string{"192.0.2.10/32"}}}},
	}
	if !proto.Equal(ap.Spec.Rules[n], nodes) || !proto.Equal(ap.Spec.Rules[n+1], apiServer) {
		t.Fatalf("entity rules %v, %v", ap.Spec.Rules[n], ap.Spec.Rules[n+1])
	}
}
