package netpolmatch

import (
	"testing"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

func TestAllowsIstio(t *testing.T) {
	spec := &v1alpha1.IstioPolicySpec{
		Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "cart"}},
		Rules: []v1alpha1.IstioRule{
			{From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{Principals: []string{"cluster.local/ns/shop/sa/frontend"}}}},
				To: []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: []string{"8080"}}}}},
			{From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{IPBlocks: []string{"203.0.113.0/24"}}}}},
		},
	}
	for _, tc := range []struct {
		name               string
		spec               *v1alpha1.IstioPolicySpec
		principal, address string
		port               int32
		want               bool
	}{
		{"learned principal and port", spec, "cluster.local/ns/shop/sa/frontend", "10.0.0.1", 8080, true},
		{"learned principal, other port", spec, "cluster.local/ns/shop/sa/frontend", "10.0.0.1", 9090, false},
		{"other principal", spec, "cluster.local/ns/shop/sa/cart", "10.0.0.1", 8080, false},
		{"address in an ipBlock, any port", spec, "", "203.0.113.7", 1, true},
		{"block inside an ipBlock", spec, "", "203.0.113.0/25", 1, true},
		{"block wider than the ipBlock", spec, "", "203.0.112.0/23", 1, false},
		{"address outside", spec, "", "198.51.100.1", 8080, false},
		{"no spec", nil, "", "198.51.100.1", 8080, true},
		{"no rules allows nothing", &v1alpha1.IstioPolicySpec{}, "cluster.local/ns/shop/sa/frontend", "", 8080, false},
		{"empty rule allows all", &v1alpha1.IstioPolicySpec{Rules: []v1alpha1.IstioRule{{}}}, "", "", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AllowsIstio(tc.spec, tc.principal, tc.address, tc.port); got != tc.want {
				t.Errorf("AllowsIstio = %v, want %v", got, tc.want)
			}
		})
	}
}
