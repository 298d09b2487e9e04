package render

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// tcp is a NetworkPolicy's ports for TCP port n.
func tcp(n int32) []networkingv1.NetworkPolicyPort {
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(n))}}
}

// ciliumEgress is a cilium-backend egress spec of shop/web with a workload
// peer, an address block, the API server, the nodes and two DNS names.
func ciliumEgress() v1alpha1.PolicySpec {
	return v1alpha1.PolicySpec{
		Backend: v1alpha1.BackendCilium, Direction: v1alpha1.DirectionEgress,
		TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "web"},
		Kubernetes: &networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "shop"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				}},
				Ports: tcp(5432),
			}, {
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.7/32"}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(5000)), EndPort: ptr.To[int32](5010)}},
			}},
		},
		Outside: []v1alpha1.OutsidePeer{
			{Entity: v1alpha1.EntityAPIServer, Ports: tcp(6443)},
			{Entity: v1alpha1.EntityNodes},
			{DNSName: "api.example.com", Ports: tcp(443)},
			{DNSName: "*.storage.example.net"},
		},
	}
}

// wantCiliumEgress is what ciliumEgress renders as, in Cilium's own terms.
const wantCiliumEgress = `
endpointSelector:
  matchLabels: {app: web}
egress:
- toEndpoints:
  - matchLabels: {app: db, io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name: shop}
  toPorts:
  - ports: [{port: "5432", protocol: TCP}]
- toCIDRSet: [{cidr: 203.0.113.7/32}]
  toPorts:
  - ports: [{port: "5000", endPort: 5010, protocol: UDP}]
- toEntities: [kube-apiserver]
  toPorts:
  - ports: [{port: "6443", protocol: TCP}]
- toEntities: [host, remote-node]
- toFQDNs: [{matchName: api.example.com}]
  toPorts:
  - ports: [{port: "443", protocol: TCP}]
- toFQDNs: [{matchPattern: "*.storage.example.net"}]
- toEndpoints:
  - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
  toPorts:
  - ports: [{port: "53", protocol: ANY}]
    rules:
      dns: [{matchPattern: "*"}]
`

// TestCiliumSpecOneDNSRule: a policy that learned its lookups to the
// cluster's DNS and names outside services by DNS name has one rule towards
// the cluster's DNS: the learned one, whose port 53 goes through Cilium's DNS
// proxy, and whose other ports do not.
func TestCiliumSpecOneDNSRule(t *testing.T) {
	spec := ciliumEgress()
	dns := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
	}
	spec.Kubernetes.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{dns},
		Ports: append(tcp(9153), networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))})}}
	spec.Outside = []v1alpha1.OutsidePeer{{DNSName: "api.example.com", Ports: tcp(443)}}
	got, err := ciliumSpec(&spec)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"endpointSelector":{"matchLabels":{"app":"web"}},"egress":[` +
		`{"toEndpoints":[{"matchLabels":{"io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name":"kube-system","k8s-app":"kube-dns"}}],` +
		`"toPorts":[{"ports":[{"port":"9153","protocol":"TCP"}]},{"ports":[{"port":"53","protocol":"UDP"}],"rules":{"dns":[{"matchPattern":"*"}]}}]},` +
		`{"toFQDNs":[{"matchName":"api.example.com"}],"toPorts":[{"ports":[{"port":"443","protocol":"TCP"}]}]}]}`
	if g := mustJSON(t, got); g != want {
		t.Fatalf("rendered\n%s\nwant\n%s", g, want)
	}
}

func TestCiliumSpec(t *testing.T) {
	spec := ciliumEgress()
	got, err := ciliumSpec(&spec)
	if err != nil {
		t.Fatal(err)
	}
	var want cnpSpec
	if err := yaml.UnmarshalStrict([]byte(wantCiliumEgress), &want); err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got), mustJSON(t, &want); g != w {
		t.Fatalf("rendered\n%s\nwant\n%s", g, w)
	}

	// Ingress: the rules' from side; a DNS name has no ingress form; no rule
	// at all is the one empty rule that puts the pods into default deny.
	spec.Direction = v1alpha1.DirectionIngress
	spec.Kubernetes.Egress, spec.Kubernetes.PolicyTypes = nil, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	spec.Outside = []v1alpha1.OutsidePeer{{Entity: v1alpha1.EntityNodes}, {DNSName: "api.example.com"}}
	got, err = ciliumSpec(&spec)
	if err != nil {
		t.Fatal(err)
	}
	if g := mustJSON(t, got); g != `{"endpointSelector":{"matchLabels":{"app":"web"}},"ingress":[{"fromEntities":["host","remote-node"]}]}` {
		t.Errorf("ingress from the nodes: %s", g)
	}
	spec.Outside = nil
	got, _ = ciliumSpec(&spec)
	if g := mustJSON(t, got); g != `{"endpointSelector":{"matchLabels":{"app":"web"}},"ingress":[{}]}` {
		t.Errorf("ingress that allows nothing: %s", g)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ciliumNetworkPolicy(t *testing.T, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := ciliumNetworkPolicies{}.empty()
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// TestRenderCiliumNetworkPolicy: a cilium-backend policy in protect mode has
// a CiliumNetworkPolicy of its name, owned by it, that Cilium's own CRD
// admits; drift is reverted; monitor mode removes it.
func TestRenderCiliumNetworkPolicy(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	startRender(t)
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web-egress"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: ciliumEgress(), Mode: v1alpha1.PolicyModeProtect},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	waitFor(t, "the CiliumNetworkPolicy", 20*time.Second, func() bool { _, ok := ciliumNetworkPolicy(t, policy.Name); return ok })
	cnp, _ := ciliumNetworkPolicy(t, policy.Name)
	if !metav1.IsControlledBy(cnp, policy) {
		t.Fatalf("CiliumNetworkPolicy not controlled by the policy: %v", cnp.GetOwnerReferences())
	}
	var want cnpSpec
	if err := yaml.UnmarshalStrict([]byte(wantCiliumEgress), &want); err != nil {
		t.Fatal(err)
	}
	wantMap, err := toUnstructured(&want)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, cnp.Object["spec"]), mustJSON(t, wantMap); g != w {
		t.Fatalf("the API server holds\n%s\nwant\n%s", g, w)
	}
	waitFor(t, "Rendered True", 20*time.Second, func() bool {
		var p v1alpha1.WorkloadNetworkPolicy
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: policy.Name}, &p); err != nil {
			return false
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonProtect
	})

	if err := unstructured.SetNestedStringMap(cnp.Object, map[string]string{"app": "drifted"}, "spec", "endpointSelector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Update(ctx, cnp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift to be reverted", 20*time.Second, func() bool {
		cnp, ok := ciliumNetworkPolicy(t, policy.Name)
		if !ok {
			return false
		}
		app, _, _ := unstructured.NestedString(cnp.Object, "spec", "endpointSelector", "matchLabels", "app")
		return app == "web"
	})

	setMode(t, policy, v1alpha1.PolicyModeMonitor)
	waitFor(t, "monitor mode to remove the CiliumNetworkPolicy", 20*time.Second, func() bool {
		_, ok := ciliumNetworkPolicy(t, policy.Name)
		return !ok
	})
}
