// Package v1alpha1 holds the Network Enforcer API: WorkloadNetworkPolicyProposal,
// what the enforcer learned from the data plane, and WorkloadNetworkPolicy, what a
// person promoted from it and the enforcer renders as the data plane's own object.
//
// +kubebuilder:object:generate=true
// +groupName=networkenforcer.kubewarden.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "networkenforcer.kubewarden.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
