// Package flow is the one flow schema of Network Enforcer: the attributes of the
// log record that every receiver emits for a flow and every processor reads.
// Receivers differ only in how they fill a Record; everything after them reads
// Records and never looks at a data plane's own format. docs/flow-schema.md
// documents the attributes for users.
package flow

// EventName is the event name of every flow log record.
const EventName = "network_enforcer.flow"

// Attribute keys. OpenTelemetry semantic-convention names are used where one
// exists (source.address, destination.port, network.transport, k8s.*); an end's
// Kubernetes attributes carry the end as a prefix.
const (
	AttrProvider       = "enforcement.provider"
	AttrOutcome        = "flow.outcome"
	AttrPendingOutcome = "flow.pending_outcome"
	AttrReporter       = "flow.reporter"
	AttrDirection      = "flow.direction"
	AttrCount          = "flow.count"
	AttrTransport      = "network.transport"

	AttrPolicyKind             = "policy.ref.kind"
	AttrPolicyNamespace        = "policy.ref.namespace"
	AttrPolicyName             = "policy.ref.name"
	AttrPendingPolicyKind      = "policy.pending.ref.kind"
	AttrPendingPolicyNamespace = "policy.pending.ref.namespace"
	AttrPendingPolicyName      = "policy.pending.ref.name"
)

// LabelSeparator joins an end's pod labels (key=value) in its labels attribute,
// and its DNS names in its names attribute. Neither a label key, a label value
// nor a DNS name can hold it.
const LabelSeparator = ","

// endKeys are the attribute keys of one end of a flow.
type endKeys struct {
	address, port, namespace, pod, workloadKind, workloadName, identity, labels, names, external string
}

// The attribute keys of each end: the semantic-convention name after "source." or
// "destination.". Spelled out rather than concatenated, so that writing a record
// builds no strings.
var (
	sourceKeys = endKeys{
		address: "source.address", port: "source.port",
		namespace: "source.k8s.namespace.name", pod: "source.k8s.pod.name",
		workloadKind: "source.k8s.workload.kind", workloadName: "source.k8s.workload.name",
		identity: "source.identity", labels: "source.k8s.pod.labels", names: "source.dns.names",
		external: "source.external",
	}
	destinationKeys = endKeys{
		address: "destination.address", port: "destination.port",
		namespace: "destination.k8s.namespace.name", pod: "destination.k8s.pod.name",
		workloadKind: "destination.k8s.workload.kind", workloadName: "destination.k8s.workload.name",
		identity: "destination.identity", labels: "destination.k8s.pod.labels", names: "destination.dns.names",
		external: "destination.external",
	}
)

// Provider is the data plane that reported a flow.
type Provider string

// The providers.
const (
	ProviderIstio  Provider = "istio"
	ProviderCalico Provider = "calico"
	ProviderCilium Provider = "cilium"
)

// Outcome is what the data plane did with a flow.
type Outcome string

// The outcomes. DryRunDenied is a flow that a monitor-mode (dry-run) policy would
// have denied; Audit is a flow that a policy in audit mode would have denied.
const (
	OutcomeAllowed      Outcome = "allowed"
	OutcomeDenied       Outcome = "denied"
	OutcomeDryRunDenied Outcome = "dry_run_denied"
	OutcomeAudit        Outcome = "audit"
)

// Reporter is the end whose data plane agent reported the flow.
type Reporter string

// The reporters. Both is a report that covers the two ends at once.
const (
	ReporterSource      Reporter = "source"
	ReporterDestination Reporter = "destination"
	ReporterBoth        Reporter = "both"
)

// Direction is the traffic direction that the data plane gives for a flow, seen
// from the end that reported it.
type Direction string

// The directions.
const (
	DirectionIngress Direction = "ingress"
	DirectionEgress  Direction = "egress"
)

// Transport is the L4 protocol of a flow, as in network.transport.
type Transport string

// The transports that a network policy can name.
const (
	TransportTCP  Transport = "tcp"
	TransportUDP  Transport = "udp"
	TransportSCTP Transport = "sctp"
)

// External says why an end is outside the cluster's workloads; empty for a pod.
type External string

// The kinds of external end.
const (
	ExternalWorld External = "world"
	ExternalHost  External = "host"
	// ExternalRemoteNode is another node than the one of the pod at the
	// flow's other end, where the data plane tells them apart (Cilium's
	// remote-node identity); ExternalHost is then that pod's own node.
	ExternalRemoteNode External = "remote_node"
	// ExternalAPIServer is the Kubernetes API server, where the data plane
	// names it apart from the host (Cilium's kube-apiserver identity).
	ExternalAPIServer  External = "apiserver"
	ExternalNetworkSet External = "network_set"
	ExternalNetwork    External = "network"
	ExternalUnknown    External = "unknown"
)
