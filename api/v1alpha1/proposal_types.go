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

	// coverageGaps are what learning may have missed while it learned the
	// proposal: the gaps that the data plane reported for the nodes where
	// the workload's pods ran, and its flows that could not be attributed,
	// one entry per cause. The Coverage condition is False while one is
	// more recent than the writer's stable_after.
	// +optional
	// +listType=map
	// +listMapKey=cause
	// +kubebuilder:validation:MaxItems=3
	CoverageGaps []CoverageGap `json:"coverageGaps,omitempty"`

	// amendment is set on a proposal that amends a WorkloadNetworkPolicy:
	// the edges that it adds, each tied to the workload revisions that made
	// it, and the policy's rules that it removes.
	// +optional
	Amendment *AmendmentStatus `json:"amendment,omitempty"`

	// The observed traffic of the workload and direction, with the verdict of
	// the current spec on each edge.
	ObservedTraffic `json:",inline"`
}

// MaxAmendedEdges is how many edges an amendment's status lists: the first
// ones learned. Its spec holds every one.
const MaxAmendedEdges = 128

// AmendmentStatus says what an amendment changes in the policy it amends.
// Its spec is the policy's spec with these changes made: promoting it makes
// that the policy's spec.
type AmendmentStatus struct {
	// policy is the name of the WorkloadNetworkPolicy, in the proposal's
	// namespace, that this proposal amends.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Policy string `json:"policy"`

	// since is when the policy was last promoted or amended: an edge made by
	// a revision that appeared after it is a NewRevision edge.
	// +required
	Since metav1.Time `json:"since"`

	// added are the edges that the policy does not allow and its workload
	// made: the violations (monitor) and refused connections (protect) that
	// the amendment's spec allows, oldest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	Added []AmendedEdge `json:"added,omitempty"`

	// newRevisionEdges and learnedRevisionEdges count the added edges of
	// each origin.
	// +optional
	NewRevisionEdges int32 `json:"newRevisionEdges,omitempty"`
	// +optional
	LearnedRevisionEdges int32 `json:"learnedRevisionEdges,omitempty"`

	// removed are the policy's rules that no traffic used for the writer's
	// unused_rule_age: the amendment's spec leaves them out.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	Removed []RuleUse `json:"removed,omitempty"`
}

// EdgeOrigin says which release made an amended edge.
// +kubebuilder:validation:Enum=NewRevision;LearnedRevision
type EdgeOrigin string

const (
	// EdgeOriginNewRevision: the edge was first made by a revision that
	// appeared after the policy's last promotion or amendment; a release is
	// expected to bring such edges.
	EdgeOriginNewRevision EdgeOrigin = "NewRevision"
	// EdgeOriginLearnedRevision: the edge was made by a revision that was
	// already live while the policy was learned. Learning missed a rare path,
	// or a pod does what it never did: a reviewer looks at these first.
	EdgeOriginLearnedRevision EdgeOrigin = "LearnedRevision"
)

// AmendedEdge is one edge that an amendment adds, with the revisions that
// made it.
type AmendedEdge struct {
	// peer is the other end of the edge.
	// +required
	Peer ObservedPeer `json:"peer"`

	// protocol of the edge.
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`

	// port of the edge, at the destination.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// origin is NewRevision or LearnedRevision: for an egress edge, by the
	// revision of the policy's workload; for an ingress edge, by the
	// client's revision when the client is a workload (which release
	// brought a new client), else by the workload's own.
	// +required
	Origin EdgeOrigin `json:"origin"`

	// firstSeen is the time of the first flow of the edge that the policy
	// did not allow.
	// +required
	FirstSeen metav1.Time `json:"firstSeen"`

	// targetRevision is the revision of the policy's workload whose pod made
	// the edge first.
	// +optional
	TargetRevision *WorkloadRevision `json:"targetRevision,omitempty"`

	// peerRevision is the revision of the peer, when the peer is a workload.
	// +optional
	PeerRevision *WorkloadRevision `json:"peerRevision,omitempty"`
}

// WorkloadRevision is one revision of a workload: a pod template, as its
// controller keeps it.
type WorkloadRevision struct {
	// name of the revision: a Deployment's ReplicaSet, a StatefulSet's or
	// DaemonSet's ControllerRevision, or <cronjob>-<hash> for a CronJob's
	// Job template.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// hash is the pods' pod-template-hash (Deployment) or
	// controller-revision-hash (StatefulSet, DaemonSet) label, or the hash
	// of a CronJob's Job template.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Hash string `json:"hash,omitempty"`

	// created is when the revision appeared: its ReplicaSet's or
	// ControllerRevision's creation, or the first Job of that template.
	// +optional
	Created *metav1.Time `json:"created,omitempty"`

	// images are the container images that the revision's pod template
	// asks for (spec.containers[].image, not the digest that ran).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	Images []string `json:"images,omitempty"`
}

// CoverageGapCause is why learning may have missed flows.
// +kubebuilder:validation:Enum=LostEvents;NodeUnreadable;Unattributed
type CoverageGapCause string

// The causes of a coverage gap.
const (
	// CoverageLostEvents: the data plane dropped flow events of a node
	// before sending them (Hubble's lost-event notices).
	CoverageLostEvents CoverageGapCause = "LostEvents"
	// CoverageNodeUnreadable: a node's flows could not be read for a while
	// (Hubble Relay's unavailable node, a broken stream in nodes mode).
	CoverageNodeUnreadable CoverageGapCause = "NodeUnreadable"
	// CoverageUnattributed: flows of the workload's pods named a pod that
	// the enforcer's cache did not know at the time, so they taught nothing.
	CoverageUnattributed CoverageGapCause = "Unattributed"
)

// MaxCoverageGapNodes is how many nodes a coverage gap names: the newest.
const MaxCoverageGapNodes = 16

// CoverageGap is every gap of one cause that concerned a proposal.
type CoverageGap struct {
	// cause of the gaps.
	// +required
	Cause CoverageGapCause `json:"cause"`

	// reports counts the data plane's notices (lost events, unreadable
	// nodes), or the batches of flows that could not be attributed.
	// +required
	// +kubebuilder:validation:Minimum=1
	Reports int64 `json:"reports"`

	// events is how many events the data plane said it lost, or how many
	// flows could not be attributed; 0 when the data plane does not say.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Events int64 `json:"events,omitempty"`

	// first is when the first of them was reported.
	// +required
	First metav1.Time `json:"first"`

	// last is when the newest of them was reported: the Coverage condition
	// counts from it.
	// +required
	Last metav1.Time `json:"last"`

	// nodes are the nodes that the gaps concerned, the newest last; "*"
	// stands for every node, when the data plane did not name one.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Nodes []string `json:"nodes,omitempty"`
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
// +kubebuilder:printcolumn:name="Amends",type=string,JSONPath=`.status.amendment.policy`,description="The policy that this proposal amends; empty for a first proposal"
// +kubebuilder:printcolumn:name="Learned Rev",type=integer,JSONPath=`.status.amendment.learnedRevisionEdges`,priority=1,description="Edges made by a revision that was live while the policy was learned: review these first"
// +kubebuilder:printcolumn:name="Observed",type=integer,JSONPath=`.status.observedEdges`
// +kubebuilder:printcolumn:name="Would Block",type=integer,JSONPath=`.status.wouldBlockEdges`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Stable, covered, with complete evidence, and protect would block nothing observed: see the Ready condition"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1,description="Why the proposal is not ready: the first condition that is not as promotion asks"
// +kubebuilder:printcolumn:name="Stable",type=string,JSONPath=`.status.conditions[?(@.type=="Stable")].status`,description="No new edge was learned for stable_after: see the Stable condition"
// +kubebuilder:printcolumn:name="Coverage",type=string,JSONPath=`.status.conditions[?(@.type=="Coverage")].status`,priority=1,description="No gap in the flows was reported within stable_after: see the Coverage condition"
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
