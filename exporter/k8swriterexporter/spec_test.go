package k8swriterexporter

import (
	"fmt"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

func ports(ps ...portRef) map[portRef]struct{} {
	m := map[portRef]struct{}{}
	for _, p := range ps {
		m[p] = struct{}{}
	}
	return m
}

// TestRenderIsCanonicalAndMergesByUnion: what a proposal holds reads back as the
// rules it was written from, in any order; a union with what it holds already
// changes nothing, and new ports join their peer's rule, sorted.
func TestRenderIsCanonicalAndMergesByUnion(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}}
	target := v1alpha1.TargetRef{Kind: "Deployment", Name: "orders"}
	cart := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	for _, backend := range []v1alpha1.Backend{v1alpha1.BackendKubernetes, v1alpha1.BackendIstio} {
		rs := rules{}
		if backend == v1alpha1.BackendIstio {
			rs.add(&rule{principal: "cluster.local/ns/web/sa/web", ports: ports(portRef{"tcp", 8080})})
			rs.add(&rule{principal: "cluster.local/ns/shop/sa/cart", ports: ports(portRef{"tcp", 9090}, portRef{"tcp", 8080})})
		} else {
			rs.add(&rule{namespace: "web", selector: web, ports: ports(portRef{"tcp", 8080})})
			rs.add(&rule{namespace: "shop", selector: cart, ports: ports(portRef{"udp", 53}, portRef{"tcp", 9090}, portRef{"tcp", 8080})})
		}
		spec := specOf(backend, target, v1alpha1.DirectionIngress, sel, rs)

		again := specOf(backend, target, v1alpha1.DirectionIngress, sel, rulesOf(&spec))
		if !apiequality.Semantic.DeepEqual(spec, again) {
			t.Fatalf("%s: written and read back, the spec changed:\n%+v\n%+v", backend, spec, again)
		}
		merged := rulesOf(&spec)
		for _, r := range rs {
			merged.add(r)
		}
		if !apiequality.Semantic.DeepEqual(spec, specOf(backend, target, v1alpha1.DirectionIngress, sel, merged)) {
			t.Fatalf("%s: a union with the same rules changed the spec", backend)
		}
		if backend == v1alpha1.BackendIstio {
			r := spec.Istio.Rules
			if len(r) != 2 || r[0].From[0].Source.Principals[0] != "cluster.local/ns/shop/sa/cart" ||
				len(r[0].To[0].Operation.Ports) != 2 || r[0].To[0].Operation.Ports[0] != "8080" {
				t.Fatalf("istio rules %+v", r)
			}
			continue
		}
		in := spec.Kubernetes.Ingress
		if len(in) != 2 || in[0].From[0].NamespaceSelector.MatchLabels[namespaceLabel] != "shop" {
			t.Fatalf("ingress rules %+v", in)
		}
		var got []string
		for _, p := range in[0].Ports {
			got = append(got, string(*p.Protocol)+"/"+p.Port.String())
		}
		if want := "[TCP/8080 TCP/9090 UDP/53]"; fmt.Sprint(got) != want {
			t.Errorf("ports %v, want %s", got, want)
		}
	}
}
