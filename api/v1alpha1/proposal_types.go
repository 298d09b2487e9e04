package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadNetworkPolicyProposalStatus is what the enforcer reports about a proposal.
type WorkloadNetworkPolicyProposalStatus struct {
	// observedGeneration is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions report the state of the proposal.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastNewEdge is the last edge that the writer learned into the spec, and
	// when: the Stable condition counts from it.
	// +optional
	LastNewEdge *NewEdge `json:"lastNewEdge,omitempty"`

	// The observed traffic of the workload and direction, with the verdict of
	// the current spec on each edge.
	ObservedTraffic `json:",inline"`
}

// NewEdge is an edge that the writer added to a proposal's spec.
type NewEdge struct {
	// time is when the writer wrote it into the spec.
	// +required
	Time metav1.Time `json:"time"`

	// peer is the other end of the edge; absent when the writer does not
	// track the edge one by one (past its tracking limit).
	// +optional
	Peer *ObservedPeer `json:"peer,omitempty"`

	// protocol of the edge.
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`

	// port of the edge, at the destination.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// WorkloadNetworkPolicyProposal is the traffic that the enforcer saw for one
// workload and direction, written as a policy that would allow exactly that. Nothing
// is enforced. Set the label networkenforcer.kubewarden.io/promote=monitor|protect to
// turn it into a WorkloadNetworkPolicy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wnpp,categories=networkenforcer
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend`
// +kubebuilder:printcolumn:name="Direction",type=string,JSONPath=`.spec.direction`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedEdges`
// +kubebuilder:printcolumn:name="Would Block",type=integer,JSONPath=`.status.wouldBlockEdges`
// +kubebuilder:printcolumn:name="Stable",type=string,JSONPath=`.status.conditions[?(@.type=="Stable")].status`,description="No new edge was learned for stable_after: see the Stable condition"
// +kubebuilder:printcolumn:name="Estimated",type=boolean,JSONPath=`.status.estimated`,description="The edge counts are estimates: see the EvidenceComplete condition"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadNetworkPolicyProposal struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the learned policy.
	// +required
	Spec PolicySpec `json:"spec"`

	// status is what the enforcer reports about the proposal.
	// +optional
	Status WorkloadNetworkPolicyProposalStatus `json:"status,omitempty"`
}

// WorkloadNetworkPolicyProposalList is a list of WorkloadNetworkPolicyProposal.
//
// +kubebuilder:object:root=true
type WorkloadNetworkPolicyProposalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadNetworkPolicyProposal `json:"items"`
}
