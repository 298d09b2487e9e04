package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxObservedEdges is the most entries that status.observed can hold; the
// writer's max_observed cannot exceed it.
const MaxObservedEdges = 256

// PeerClass says what kind of end the peer of an observed edge is.
// +kubebuilder:validation:Enum=Workload;External;Host;RemoteNode;Node;APIServer;BarePod;Unidentified
type PeerClass string

const (
	// PeerClassWorkload is a workload of the cluster, named by namespace, kind
	// and name, or for Istio by its principal.
	PeerClassWorkload PeerClass = "Workload"
	// PeerClassExternal is an end outside the cluster: the world, a network, or
	// a network set.
	PeerClassExternal PeerClass = "External"
	// PeerClassHost is an end that the data plane calls the host: a node's own
	// address; with Cilium, the node of the workload's pod itself.
	PeerClassHost PeerClass = "Host"
	// PeerClassRemoteNode is another node than the workload pod's, where the
	// data plane tells the two apart (Cilium's remote-node identity).
	PeerClassRemoteNode PeerClass = "RemoteNode"
	// PeerClassNode is a host-network pod, at its node's address.
	PeerClassNode PeerClass = "Node"
	// PeerClassAPIServer is the Kubernetes API server, when the data plane
	// names it apart from the host.
	PeerClassAPIServer PeerClass = "APIServer"
	// PeerClassBarePod is a pod that no supported workload owns.
	PeerClassBarePod PeerClass = "BarePod"
	// PeerClassUnidentified is an end that could not be told: a pod the cache
	// does not know, a pod of an unsupported owner, or an Istio source without
	// an identity.
	PeerClassUnidentified PeerClass = "Unidentified"
)

// ObservedVerdict is what the spec of the object would do with an observed edge.
// +kubebuilder:validation:Enum=Allowed;WouldBlock
type ObservedVerdict string

const (
	// VerdictAllowed means that the spec allows the edge.
	VerdictAllowed ObservedVerdict = "Allowed"
	// VerdictWouldBlock means that protect mode would block the edge.
	VerdictWouldBlock ObservedVerdict = "WouldBlock"
)

// ObservedPeer is the other end of an observed edge.
type ObservedPeer struct {
	// class is what kind of end the peer is.
	// +required
	Class PeerClass `json:"class"`

	// namespace of the workload or pod.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// kind of the workload (Deployment, StatefulSet, and so on).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind,omitempty"`

	// name of the workload, or of the pod for a bare pod.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// principal is the peer's Istio identity, in the form
	// <trust-domain>/ns/<namespace>/sa/<service-account>, when it has one.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Principal string `json:"principal,omitempty"`

	// address is the peer's IP address, or the address block (CIDR) that it was
	// learned as, for a peer that is not a workload.
	// +optional
	// +kubebuilder:validation:MaxLength=43
	Address string `json:"address,omitempty"`

	// dnsName is the peer's DNS name or network set name, when the flow record
	// gives one.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DNSName string `json:"dnsName,omitempty"`
}

// ObservedEdge is one distinct edge that the enforcer saw for the workload and
// direction: a peer, a protocol and a destination port, with its verdict by the
// current spec.
type ObservedEdge struct {
	// peer is the other end of the edge.
	// +required
	Peer ObservedPeer `json:"peer"`

	// protocol is the transport protocol.
	// +required
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol"`

	// port is the destination port.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// flows counts the flows of this edge that the enforcer saw since it
	// started.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Flows int64 `json:"flows,omitempty"`

	// firstSeen is when the enforcer first saw the edge.
	// +required
	FirstSeen metav1.Time `json:"firstSeen"`

	// lastSeen is when the enforcer last saw the edge.
	// +required
	LastSeen metav1.Time `json:"lastSeen"`

	// verdict is Allowed when the current spec allows the edge, and WouldBlock
	// when protect mode would block it.
	// +required
	Verdict ObservedVerdict `json:"verdict"`
}

// ObservedTraffic is the evidence of what the spec would do with the traffic
// that was seen: the most recently seen edges and the totals.
type ObservedTraffic struct {
	// observed are the most recently seen distinct edges, newest first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Observed []ObservedEdge `json:"observed,omitempty"`

	// observedEdges is the number of distinct edges seen, listed or not.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ObservedEdges int32 `json:"observedEdges,omitempty"`

	// wouldBlockEdges is the number of distinct edges seen, listed or not, that
	// protect mode would block.
	// +optional
	// +kubebuilder:validation:Minimum=0
	WouldBlockEdges int32 `json:"wouldBlockEdges"`

	// omittedEdges is the number of distinct edges seen that observed does not
	// list, beyond its bound.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedEdges int32 `json:"omittedEdges,omitempty"`

	// estimated is true when observedEdges and wouldBlockEdges count edges
	// that the writer does not track one by one (past its tracking limit, or
	// seen before it started and not listed): they are then estimates, within
	// about 3.25 % (one standard error, HyperLogLog with 1,024 registers), and
	// an edge not tracked keeps the verdict it was judged with when it was
	// seen. The EvidenceComplete condition says why.
	// +optional
	Estimated bool `json:"estimated"`

	// estimators keep the distinct-edge counts from one writer to the next
	// (a restart, a new leader), by peer class. Written by the writer of the
	// status; not meant to be read.
	// +optional
	Estimators *EdgeEstimators `json:"estimators,omitempty"`

	// countedBatches are, for each replica that sent the leader what it
	// learned, the last of its batches that these counts include: a batch that
	// a replica sends again to a new leader (the previous one died before it
	// wrote it everywhere) is then not counted twice. Written by the writer of
	// the status; not meant to be read.
	// +optional
	// +listType=map
	// +listMapKey=sender
	// +kubebuilder:validation:MaxItems=64
	CountedBatches []CountedBatch `json:"countedBatches,omitempty"`
}

// CountedBatch is the last batch of one sender that an object's counts
// include.
type CountedBatch struct {
	// sender is the sending replica's process: a name of its own, new with
	// each start.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Sender string `json:"sender"`

	// batch is the sequence number of the sender's batch.
	// +required
	// +kubebuilder:validation:Minimum=1
	Batch int64 `json:"batch"`

	// time is when the writer counted it: an entry the senders no longer
	// need is dropped.
	// +required
	Time metav1.Time `json:"time"`
}

// EdgeEstimators are the cardinality estimators of an object's observed
// edges.
type EdgeEstimators struct {
	// trackingLimitReached is true once the writer saw more distinct edges
	// than it tracks one by one (max_tracked_edges): the counts are estimates
	// from then on.
	// +optional
	TrackingLimitReached bool `json:"trackingLimitReached,omitempty"`

	// classes are the estimators of each peer class seen.
	// +optional
	// +listType=map
	// +listMapKey=class
	// +kubebuilder:validation:MaxItems=8
	Classes []ClassEstimators `json:"classes,omitempty"`
}

// ClassEstimators are the estimators of one peer class: HyperLogLog sketches
// in the binary form of github.com/axiomhq/hyperloglog.
type ClassEstimators struct {
	// class is the peer class.
	// +required
	Class PeerClass `json:"class"`

	// seen estimates the distinct edges of the class seen.
	// +required
	// +kubebuilder:validation:MaxLength=8192
	Seen []byte `json:"seen"`

	// wouldBlock estimates the distinct edges of the class that protect mode
	// would block, as judged when they were last judged.
	// +optional
	// +kubebuilder:validation:MaxLength=8192
	WouldBlock []byte `json:"wouldBlock,omitempty"`
}

// String says who the peer is, in one line: its class, then its workload
// (namespace/kind/name), principal, DNS name and address, those it has.
func (p ObservedPeer) String() string {
	var parts []string
	if p.Namespace != "" || p.Name != "" {
		w := p.Name
		if p.Kind != "" {
			w = p.Kind + "/" + p.Name
		}
		parts = append(parts, strings.Trim(p.Namespace+"/"+w, "/"))
	}
	for _, s := range []string{p.Principal, p.DNSName, p.Address} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return string(p.Class)
	}
	return string(p.Class) + " " + strings.Join(parts, " ")
}
