package netpolmatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// learnedIngress is spec.kubernetes as the writer learns it for shop/web:
// frontend of shop and prometheus of monitoring, on TCP 8080 and 9090.
func learnedIngress() *networkingv1.NetworkPolicySpec {
	port := func(n int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(n))}
	}
	ns := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: name}}
	}
	return &networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: ns("shop"), PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(8080)}},
			{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: ns("monitoring"), PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(9090)}},
		},
	}
}

func pod(ns string, labels map[string]string) *Peer {
	return &Peer{Address: "10.0.0.1", Namespace: ns, PodLabels: labels, NamespaceLabels: map[string]string{corev1.LabelMetadataName: ns, "team": "a"}}
}

func TestAllows(t *testing.T) {
	frontend := pod("shop", map[string]string{"app": "frontend", "version": "v2"})
	for _, tc := range []struct {
		name  string
		spec  *networkingv1.NetworkPolicySpec
		d     v1alpha1.Direction
		peer  *Peer
		proto corev1.Protocol
		port  int32
		want  bool
	}{
		{"learned peer and port", learnedIngress(), v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 8080, true},
		{"learned peer, other rule's port", learnedIngress(), v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 9090, false},
		{"learned peer, UDP", learnedIngress(), v1alpha1.DirectionIngress, frontend, corev1.ProtocolUDP, 8080, false},
		{"same labels, other namespace", learnedIngress(), v1alpha1.DirectionIngress, pod("dev", frontend.PodLabels), corev1.ProtocolTCP, 8080, false},
		{"other pod labels", learnedIngress(), v1alpha1.DirectionIngress, pod("shop", map[string]string{"app": "cart"}), corev1.ProtocolTCP, 8080, false},
		{"second rule", learnedIngress(), v1alpha1.DirectionIngress, pod("monitoring", map[string]string{"app": "prometheus"}), corev1.ProtocolTCP, 9090, true},
		{"outside the cluster", learnedIngress(), v1alpha1.DirectionIngress, &Peer{Address: "203.0.113.9"}, corev1.ProtocolTCP, 8080, false},
		{"unknown labels", learnedIngress(), v1alpha1.DirectionIngress, &Peer{Address: "10.0.0.2", Namespace: "shop"}, corev1.ProtocolTCP, 8080, false},
		{"egress is not governed", learnedIngress(), v1alpha1.DirectionEgress, pod("dev", nil), corev1.ProtocolTCP, 1, true},
		{"no spec", nil, v1alpha1.DirectionIngress, pod("dev", nil), corev1.ProtocolTCP, 1, true},
		{"deny all ingress", &networkingv1.NetworkPolicySpec{}, v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 8080, false},
		{"empty rule allows all", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
			v1alpha1.DirectionIngress, pod("dev", nil), corev1.ProtocolSCTP, 7, true},
		{"podSelector alone is the policy's namespace", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}},
			v1alpha1.DirectionIngress, pod("dev", nil), corev1.ProtocolTCP, 80, false},
		{"podSelector alone, same namespace", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}},
			v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 80, true},
		{"namespace expression", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}}}}}},
			v1alpha1.DirectionIngress, pod("dev", nil), corev1.ProtocolTCP, 80, true},
		{"egress to ipBlock", &networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24", Except: []string{"203.0.113.128/25"}}}}}}},
			v1alpha1.DirectionEgress, &Peer{Address: "203.0.113.9"}, corev1.ProtocolTCP, 443, true},
		{"egress to ipBlock except", &networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24", Except: []string{"203.0.113.128/25"}}}}}}},
			v1alpha1.DirectionEgress, &Peer{Address: "203.0.113.200"}, corev1.ProtocolTCP, 443, false},
		{"egress rules imply the type", &networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(53)), Protocol: ptr.To(corev1.ProtocolUDP)}}}}},
			v1alpha1.DirectionEgress, pod("kube-system", nil), corev1.ProtocolUDP, 5353, false},
		{"port range", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8000)), EndPort: ptr.To[int32](8100)}}}}},
			v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 8080, true},
		{"past the port range", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(8000)), EndPort: ptr.To[int32](8100)}}}}},
			v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 8101, false},
		{"named port cannot be proven a violation", &networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("http"))}}}}},
			v1alpha1.DirectionIngress, frontend, corev1.ProtocolTCP, 1234, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Allows(tc.spec, "shop", tc.d, tc.peer, tc.proto, tc.port, nil); got != tc.want {
				t.Errorf("allows = %v, want %v", got, tc.want)
			}
			// With a batch's cache, asked twice: the converted selectors answer alike.
			sc := SelectorCache{}
			for range 2 {
				if got := Allows(tc.spec, "shop", tc.d, tc.peer, tc.proto, tc.port, sc); got != tc.want {
					t.Errorf("allows with a cache = %v, want %v", got, tc.want)
				}
			}
		})
	}
}
