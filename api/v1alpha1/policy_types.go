package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PolicyMode says whether the data plane blocks traffic that a policy does not allow.
// +kubebuilder:validation:Enum=monitor;protect
type PolicyMode string

const (
	// PolicyModeMonitor reports traffic that the policy does not allow, and blocks nothing.
	PolicyModeMonitor PolicyMode = "monitor"
	// PolicyModeProtect has the data plane block traffic that the policy does not allow.
	PolicyModeProtect PolicyMode = "protect"
)

// WorkloadNetworkPolicySpec is a promoted policy: the learned spec and a mode. The
// CEL rules of PolicySpec apply to it too: controller-gen carries an embedded
// type's rules into the embedding type's schema.
type WorkloadNetworkPolicySpec struct {
	PolicySpec `json:",inline"`

	// mode is monitor (report violations, block nothing) or protect (the data plane
	// blocks traffic that the policy does not allow). Changing it updates the native
	// object in place.
	// +optional
	// +kubebuilder:default=monitor
	Mode PolicyMode `json:"mode,omitempty"`
}

// WorkloadNetworkPolicy is a policy for one workload and direction, promoted from a
// proposal or written by hand. The enforcer renders it as the data plane's own
// object and reports every violation in its status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wnp,categories=networkenforcer
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.metadata.annotations.networkenforcer\.kubewarden\.io/revision`,description="The policy's current revision: see its ControllerRevisions"
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Active Violations",type=integer,JSONPath=`.status.activeViolationCount`
// +kubebuilder:printcolumn:name="Would Block",type=integer,JSONPath=`.status.wouldBlockEdges`
// +kubebuilder:printcolumn:name="Estimated",type=boolean,JSONPath=`.status.estimated`,description="The edge counts are estimates: see the EvidenceComplete condition"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy and its mode.
	// +required
	Spec WorkloadNetworkPolicySpec `json:"spec"`

	// status reports the violations that the enforcer observed.
	// +optional
	Status WorkloadNetworkPolicyStatus `json:"status,omitempty"`
}

// WorkloadNetworkPolicyList is a list of WorkloadNetworkPolicy.
//
// +kubebuilder:object:root=true
type WorkloadNetworkPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadNetworkPolicy `json:"items"`
}
