package v1alpha1

import (
	networkingv1 "k8s.io/api/networking/v1"
)

// Backend names the data plane object that a policy is rendered as.
// +kubebuilder:validation:Enum=kubernetes;istio;cilium
type Backend string

const (
	// BackendKubernetes renders a networking.k8s.io/v1 NetworkPolicy (Calico, Cilium).
	BackendKubernetes Backend = "kubernetes"
	// BackendIstio renders a security.istio.io/v1 AuthorizationPolicy (Istio ambient).
	BackendIstio Backend = "istio"
	// BackendCilium renders a cilium.io/v2 CiliumNetworkPolicy (Cilium), which
	// names the API server and the nodes as Cilium's own entities and outside
	// services by DNS name, as a NetworkPolicy cannot.
	BackendCilium Backend = "cilium"
)

// Entity is a peer beyond the cluster's workloads that every data plane knows by
// what it is rather than by an address.
// +kubebuilder:validation:Enum=APIServer;Nodes;Host;RemoteNodes
type Entity string

const (
	// EntityAPIServer is the Kubernetes API server, wherever it runs: the
	// addresses and ports of the default/kubernetes Service's endpoints.
	EntityAPIServer Entity = "APIServer"
	// EntityNodes are the cluster's nodes: the pod's own node, the other
	// nodes, and the host-network pods on them.
	EntityNodes Entity = "Nodes"
	// EntityHost is the node of each of the workload's pods, where the data
	// plane tells it from the others (Cilium's host). Backends that render
	// the nodes by their addresses render every node for it.
	EntityHost Entity = "Host"
	// EntityRemoteNodes are the nodes other than the pod's own, where the
	// data plane tells them apart (Cilium's remote-node). Backends that
	// render the nodes by their addresses render every node for it.
	EntityRemoteNodes Entity = "RemoteNodes"
)

// OutsidePeer is one peer beyond the cluster's workloads, by what it is, and the
// ports allowed with it. It names exactly one of entity and dnsName.
// +kubebuilder:validation:XValidation:rule="has(self.entity) != has(self.dnsName)",message="an outside peer names exactly one of entity and dnsName"
type OutsidePeer struct {
	// entity is the API server (APIServer) or the cluster's nodes (Nodes).
	// +optional
	Entity Entity `json:"entity,omitempty"`

	// dnsName is an outside service by its DNS name, lower case and without the
	// trailing dot: a full name (api.example.com) or a pattern whose first
	// label is * for any one label (*.example.com).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	DNSName string `json:"dnsName,omitempty"`

	// ports are the allowed ports, as in a NetworkPolicy rule (a port, or a
	// range with endPort). Empty allows every port.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Ports []networkingv1.NetworkPolicyPort `json:"ports,omitempty"`
}

// Direction is the direction of traffic, seen from the target workload.
// +kubebuilder:validation:Enum=Ingress;Egress
type Direction string

const (
	// DirectionIngress is traffic that the target workload receives.
	DirectionIngress Direction = "Ingress"
	// DirectionEgress is traffic that the target workload sends.
	DirectionEgress Direction = "Egress"
)

// WorkloadKind is the kind of workload that a proposal or policy is about.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;CronJob;Job
type WorkloadKind string

// The workload kinds that learning resolves pods to.
const (
	WorkloadKindDeployment  WorkloadKind = "Deployment"
	WorkloadKindStatefulSet WorkloadKind = "StatefulSet"
	WorkloadKindDaemonSet   WorkloadKind = "DaemonSet"
	WorkloadKindCronJob     WorkloadKind = "CronJob"
	WorkloadKindJob         WorkloadKind = "Job"
)

// TargetRef names the workload, in the object's own namespace, that a proposal or
// policy applies to.
type TargetRef struct {
	// kind of the workload: Deployment, StatefulSet, DaemonSet, CronJob, or Job
	// (a Job that no CronJob owns).
	// +required
	Kind WorkloadKind `json:"kind"`

	// name of the workload in the namespace of this object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// IstioSelector selects the pods that an Istio AuthorizationPolicy applies to.
type IstioSelector struct {
	// matchLabels are the pod labels that select the workload. All must match.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// IstioSource is one allowed source of traffic.
type IstioSource struct {
	// principals are the allowed peer identities, in the form
	// <trust-domain>/ns/<namespace>/sa/<service-account>, without the spiffe:// prefix.
	// +optional
	// +listType=atomic
	Principals []string `json:"principals,omitempty"`

	// ipBlocks are the allowed source address blocks, as CIDRs (for example
	// 203.0.113.7/32 or 2001:db8::/64), for sources without an identity.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=43
	IPBlocks []string `json:"ipBlocks,omitempty"`
}

// IstioFrom wraps one allowed source, as in an Istio AuthorizationPolicy rule.
type IstioFrom struct {
	// source that the traffic may come from.
	// +required
	Source IstioSource `json:"source"`
}

// IstioOperation is the allowed operation of a rule. ztunnel enforces L4 only, so
// only ports are kept.
type IstioOperation struct {
	// ports are the allowed destination ports, as strings (for example "8080").
	// +optional
	// +listType=atomic
	Ports []string `json:"ports,omitempty"`
}

// IstioTo wraps one allowed operation, as in an Istio AuthorizationPolicy rule.
type IstioTo struct {
	// operation that the traffic may perform.
	// +required
	Operation IstioOperation `json:"operation"`
}

// IstioRule allows traffic that matches one of its sources and one of its operations.
type IstioRule struct {
	// from lists the allowed sources. Empty allows every source.
	// +optional
	// +listType=atomic
	From []IstioFrom `json:"from,omitempty"`

	// to lists the allowed operations. Empty allows every operation.
	// +optional
	// +listType=atomic
	To []IstioTo `json:"to,omitempty"`
}

// IstioPolicySpec is the part of an Istio AuthorizationPolicy (action ALLOW) that
// ztunnel enforces: a selector and L4 rules.
// +kubebuilder:validation:XValidation:rule="has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0",message="spec.istio.selector.matchLabels must not be empty: an empty selector would apply the policy to every pod in the namespace"
type IstioPolicySpec struct {
	// selector picks the pods of the target workload by their labels.
	// +required
	Selector IstioSelector `json:"selector"`

	// rules list the allowed traffic. Traffic that no rule allows is a violation.
	// +optional
	// +listType=atomic
	Rules []IstioRule `json:"rules,omitempty"`
}

// PolicySpec is the part of the spec that proposals and policies share: what to
// allow for one workload and direction, in the format of one backend.
//
// +kubebuilder:validation:XValidation:rule="self.backend != 'kubernetes' || (has(self.kubernetes) && !has(self.istio))",message="backend kubernetes needs spec.kubernetes and no spec.istio"
// +kubebuilder:validation:XValidation:rule="self.backend != 'cilium' || (has(self.kubernetes) && !has(self.istio))",message="backend cilium needs spec.kubernetes and no spec.istio"
// +kubebuilder:validation:XValidation:rule="self.backend != 'istio' || (has(self.istio) && !has(self.kubernetes))",message="backend istio needs spec.istio and no spec.kubernetes"
// +kubebuilder:validation:XValidation:rule="!has(self.kubernetes) || (has(self.kubernetes.podSelector) && ((has(self.kubernetes.podSelector.matchLabels) && size(self.kubernetes.podSelector.matchLabels) > 0) || (has(self.kubernetes.podSelector.matchExpressions) && size(self.kubernetes.podSelector.matchExpressions) > 0)))",message="spec.kubernetes.podSelector must not be empty: an empty selector would apply the policy to every pod in the namespace"
// +kubebuilder:validation:XValidation:rule="self.backend != 'istio' || self.direction == 'Ingress'",message="backend istio supports direction Ingress only: ztunnel enforces inbound traffic"
type PolicySpec struct {
	// backend is the data plane format of this object: kubernetes (a NetworkPolicy,
	// for Calico and Cilium), cilium (a CiliumNetworkPolicy, for Cilium) or istio
	// (an AuthorizationPolicy, for Istio ambient). It cannot change after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="backend is immutable"
	Backend Backend `json:"backend"`

	// targetRef is the workload that this object applies to.
	// +required
	TargetRef TargetRef `json:"targetRef"`

	// direction of the traffic that this object is about, seen from the workload.
	// The istio backend takes Ingress only.
	// +required
	Direction Direction `json:"direction"`

	// kubernetes is the NetworkPolicy spec, set when backend is kubernetes or
	// cilium: the workload peers and address blocks that the object allows.
	// +optional
	Kubernetes *networkingv1.NetworkPolicySpec `json:"kubernetes,omitempty"`

	// istio is the AuthorizationPolicy spec, set when backend is istio.
	// +optional
	Istio *IstioPolicySpec `json:"istio,omitempty"`

	// outside lists the peers beyond the cluster's workloads that this object
	// allows by what they are, not by an address that goes stale: the API
	// server, the nodes, an outside service by DNS name. Every backend takes
	// them and renders each in its data plane's own terms, or says on the
	// WouldBlock condition why it cannot (docs/architecture.md).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Outside []OutsidePeer `json:"outside,omitempty"`
}
