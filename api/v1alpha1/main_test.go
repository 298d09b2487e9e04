package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// env is the control plane that every test of this package shares: starting one
// costs seconds, and each test works in a namespace of its own.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	start := time.Now()
	controlplanetest.Main(m, controlplanetest.Options{ControllerManager: true}, &env, func(*controlplanetest.Env) error {
		fmt.Printf("test control plane (etcd, kube-apiserver, CRDs, admission policies, kube-controller-manager) started in %s\n",
			time.Since(start).Round(10*time.Millisecond))
		return nil
	})
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wnp-test-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// kubernetesSpec is a valid spec of the kubernetes backend: the web Deployment may
// receive TCP 8080 from the frontend pods of the shop namespace.
func kubernetesSpec() v1alpha1.PolicySpec {
	port := intstr.FromInt32(8080)
	tcp := corev1.ProtocolTCP
	return v1alpha1.PolicySpec{
		Backend:   v1alpha1.BackendKubernetes,
		TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "web"},
		Direction: v1alpha1.DirectionIngress,
		Kubernetes: &networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}},
					PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}},
				}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
		},
	}
}

// istioSpec is a valid spec of the istio backend: the web Deployment may receive
// port 8080 from the frontend service account of the shop namespace.
func istioSpec() v1alpha1.PolicySpec {
	return v1alpha1.PolicySpec{
		Backend:   v1alpha1.BackendIstio,
		TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "web"},
		Direction: v1alpha1.DirectionIngress,
		Istio: &v1alpha1.IstioPolicySpec{
			Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "web"}},
			Rules: []v1alpha1.IstioRule{{
				From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{Principals: []string{"cluster.local/ns/shop/sa/frontend"}}}},
				To:   []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: []string{"8080"}}}},
			}},
		},
	}
}

func newProposal(ns, name string, spec v1alpha1.PolicySpec) *v1alpha1.WorkloadNetworkPolicyProposal {
	return &v1alpha1.WorkloadNetworkPolicyProposal{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       spec,
	}
}

func newPolicy(ns, name string, spec v1alpha1.PolicySpec) *v1alpha1.WorkloadNetworkPolicy {
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: spec},
	}
}
