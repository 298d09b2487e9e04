package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxViolationRecords is how many records status.violations and
// status.acknowledgedViolations each keep: the newest ones. The collector keeps the
// full history.
const MaxViolationRecords = 100

// WorkloadNetworkPolicyStatus reports the violations of a policy. The enforcer
// merges new observations into it on every status sync interval.
type WorkloadNetworkPolicyStatus struct {
	// observedGeneration is the generation of the spec that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions report the state of the policy and of its native object.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// violationCount counts every violation observation, repeats included, so it can
	// exceed the number of records.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ViolationCount int64 `json:"violationCount,omitempty"`

	// activeViolationCount is the number of records in violations.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActiveViolationCount int32 `json:"activeViolationCount,omitempty"`

	// lastViolationID is the id that the newest record got. Ids count up from 1
	// and are never reused, so an acknowledgement cannot reach a later record.
	// +optional
	// +kubebuilder:validation:Minimum=0
	LastViolationID int64 `json:"lastViolationID,omitempty"`

	// violations are the newest active (not acknowledged) violation records.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Violations []ViolationRecord `json:"violations,omitempty"`

	// acknowledgedViolations are the newest acknowledged violation records.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	AcknowledgedViolations []AcknowledgedViolation `json:"acknowledgedViolations,omitempty"`

	// The observed traffic of the workload and direction, allowed or not, with
	// the verdict of the current spec on each edge.
	ObservedTraffic `json:",inline"`

	// ruleUse is, for each rule of the spec, when observed traffic last used it.
	// A rule that no traffic uses for the enforcer's unused rule age is named
	// by the UnusedRules condition.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=512
	RuleUse []RuleUse `json:"ruleUse,omitempty"`
}

// RuleUse is the use of one rule of a policy's spec.
type RuleUse struct {
	// rule names the rule by its place in the spec: ingress[0] or egress[1]
	// for the kubernetes backend, rules[0] for istio.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Rule string `json:"rule"`

	// flows counts the observed flows that the rule allowed (the first rule
	// that allows a flow is the one that counts it).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Flows int64 `json:"flows,omitempty"`

	// lastUsed is when observed traffic last used the rule; unset when no
	// traffic has used it yet.
	// +optional
	LastUsed *metav1.Time `json:"lastUsed,omitempty"`

	// unused is true when no traffic used the rule for the unused rule age
	// (the UnusedRules condition names it): the policy's amendment removes
	// it.
	// +optional
	Unused bool `json:"unused,omitempty"`
}

// ViolationEndpoint is one end of a violating flow: a workload, or a pod
// without one, by its namespace, kind and name; any other peer by its
// class, address, DNS name and entity, as the policy's observed edges name
// it.
type ViolationEndpoint struct {
	// class of the end, as the policy's observed edges give it (Workload,
	// External, Host, RemoteNode, Node, APIServer, BarePod, Unidentified);
	// unset on records of earlier versions.
	// +optional
	Class PeerClass `json:"class,omitempty"`

	// namespace of the workload, or of the pod without one.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// kind of the workload (Deployment, StatefulSet, ...), or Pod for a pod
	// without one.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`

	// name of the workload, or of the pod without one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// identity of the workload as the data plane saw it, for example an Istio
	// principal (cluster.local/ns/shop/sa/web) or a Cilium security identity.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Identity string `json:"identity,omitempty"`

	// address of a peer that is not a workload, or the address block that it
	// is learned as.
	// +optional
	// +kubebuilder:validation:MaxLength=43
	Address string `json:"address,omitempty"`

	// dnsName is the DNS name that the data plane gave a peer outside the
	// cluster (the first in alphabetical order), or a Goldmane network set's
	// name.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DNSName string `json:"dnsName,omitempty"`

	// entity is what a peer beyond the workloads is, where the data plane
	// names it so: APIServer, or Nodes for a node or a host-network pod.
	// +optional
	Entity Entity `json:"entity,omitempty"`

	// revision of the workload whose pod this end was: its ReplicaSet,
	// ControllerRevision, or CronJob template (see WorkloadRevision).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Revision string `json:"revision,omitempty"`
}

// PolicyReference names a policy in the data plane.
type PolicyReference struct {
	// namespace of the policy; empty for a cluster-scoped policy.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// name of the policy.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
}

// ViolationRecord is one distinct violation: a source, destination, protocol, port,
// action and policy. Repeats of it only raise violationCount.
type ViolationRecord struct {
	// id identifies the record; acknowledge it with the annotation
	// networkenforcer.kubewarden.io/acknowledge-<id>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ID string `json:"id"`

	// timestamp is when the record was last observed.
	// +required
	Timestamp metav1.Time `json:"timestamp"`

	// source is the end that opened the connection.
	// +required
	Source ViolationEndpoint `json:"source"`

	// destination is the end that received the connection.
	// +required
	Destination ViolationEndpoint `json:"destination"`

	// protocol is the transport protocol.
	// +required
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol"`

	// dstPort is the destination port; 0 when the data plane does not report it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	DstPort int32 `json:"dstPort"`

	// action is monitor (seen, not blocked) or protect (blocked by the data plane).
	// +required
	Action PolicyMode `json:"action"`

	// policy is the data plane policy that the flow violated.
	// +optional
	Policy PolicyReference `json:"policy,omitempty"`
}

// AcknowledgedViolation is a violation record that a person acknowledged.
type AcknowledgedViolation struct {
	// violation is the acknowledged record.
	// +required
	Violation ViolationRecord `json:"violation"`

	// reason is the value of the acknowledge annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// acknowledgedAt is when the enforcer moved the record here.
	// +required
	AcknowledgedAt metav1.Time `json:"acknowledgedAt"`
}
