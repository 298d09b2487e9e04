package clustertest

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// CartProposal is a proposal of the kubernetes backend for the ingress of the
// fixtures' shop/cart Deployment, named name, with labels.
func CartProposal(name string, labels map[string]string) *v1alpha1.WorkloadNetworkPolicyProposal {
	return &v1alpha1.WorkloadNetworkPolicyProposal{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels},
		Spec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			},
		},
	}
}
