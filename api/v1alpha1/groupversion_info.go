// Package v1alpha1 holds the Network Enforcer API: WorkloadNetworkPolicyProposal,
// what the enforcer learned from the data plane, and WorkloadNetworkPolicy, what a
// person promoted from it and the enforcer renders as the data plane's own object.
//
// +kubebuilder:object:generate=true
// +groupName=networkenforcer.kubewarden.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "networkenforcer.kubewarden.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	// It is apimachinery's, as Kubernetes' own API packages use, so that importing
	// the API does not import controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&WorkloadNetworkPolicyProposal{}, &WorkloadNetworkPolicyProposalList{},
		&WorkloadNetworkPolicy{}, &WorkloadNetworkPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
