package hubblereceiver

import (
	"slices"
	"strconv"
	"strings"

	flowpb "github.com/cilium/cilium/api/v1/flow"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Drop reasons of Hubble flows besides the shared ones.
const (
	// dropNoPolicyVerdict is a flow whose verdict says nothing about policy: a
	// drop for another reason than policy, an error, a trace or translation point.
	dropNoPolicyVerdict flowsource.DropReason = "no_policy_verdict"
	// dropUntracked is a trace taken before the agent's connection tracking
	// (FROM_ENDPOINT, FROM_HOST, FROM_NETWORK, ...): it carries no trace reason,
	// so a reply (a server's SYN-ACK from its port to the client's ephemeral
	// port) cannot be told from a new connection. The trace of the same packet
	// at the next observation point, or the policy verdict, carries the state.
	dropUntracked flowsource.DropReason = "untracked_trace"
	// dropSameConnection is another event of a connection, or of a refused
	// attempt, that already gave a record (see connections).
	dropSameConnection flowsource.DropReason = "same_connection"
	// dropHandedOff: a flow that the previous reader counted (relay mode: up
	// to the previous leader's hand-off; nodes mode: up to the node's previous
	// reader's checkpoint, or how far the leader took its records); it is read
	// only so that the connections it belongs to are known, and their later
	// events are not counted again.
	dropHandedOff flowsource.DropReason = "handed_off"
)

// Cilium's monitor event type of a trace (pkg/monitor/api), as Hubble's event_type.type.
const (
	eventTrace = 4
)

// Cilium's reserved security identities of ends that are not pods.
const (
	identityHost       = 1
	identityWorld      = 2
	identityRemoteNode = 6
	identityKubeAPI    = 7
	identityWorldIPv4  = 9
	identityWorldIPv6  = 10
)

// convertFlow maps one Hubble flow into the flow schema. It keeps the non-reply
// L3/L4 flows that carry a policy verdict, and says why it drops the others.
//
// A real agent emits several events for one connection: a trace at each
// observation point, a policy verdict at each end that enforces policy, and for
// a refused packet a drop notification beside the verdict. convertFlow keeps
// each event that says which way the connection goes; connections then keeps
// one record per connection, outcome and direction: the trace that shows it
// passed (no direction: every end's policy judges it), the verdict of each end
// that enforces policy, and one denial per refused attempt.
func convertFlow(f *flowpb.Flow, rec *flow.Record) (flowsource.DropReason, bool) {
	// A flow without addresses: without IP, or, as Hubble sends one when the
	// request has a field mask, with an IP that holds neither address.
	if f == nil || (f.GetIP().GetSource() == "" && f.GetIP().GetDestination() == "") {
		return flowsource.DropMalformed, false
	}
	if f.GetIsReply().GetValue() {
		return flowsource.DropReply, false
	}
	if f.GetType() != flowpb.FlowType_L3_L4 {
		if _, known := flowpb.FlowType_name[int32(f.GetType())]; !known {
			return flowsource.DropUnknownEnum, false
		}
		return flowsource.DropNotL4, false
	}
	trace := f.GetEventType().GetType() == eventTrace
	if trace {
		if reason, ok := tracked(f.GetTraceReason()); !ok {
			return reason, false
		}
	}
	outcome, reason, ok := outcomeOf(f)
	if !ok {
		return reason, false
	}
	transport, srcPort, dstPort, reason, ok := transportOf(f.GetL4())
	if !ok {
		return reason, false
	}
	direction, reporter, reason, ok := directionOf(f.GetTrafficDirection())
	if !ok {
		return reason, false
	}
	if trace {
		// A trace's direction is that of the agent's connection-tracking
		// lookup (EGRESS at the destination's TO_ENDPOINT), not a policy's: the
		// trace says that the connection passed, which each end's policy judges.
		direction, reporter = "", ""
	}

	*rec = flow.Record{
		Time:        f.GetTime().AsTime(),
		Provider:    flow.ProviderCilium,
		Outcome:     outcome,
		Reporter:    reporter,
		Direction:   direction,
		Transport:   transport,
		Source:      endpointOf(f.GetSource(), f.GetIP().GetSource(), srcPort, f.GetSourceNames(), false),
		Destination: endpointOf(f.GetDestination(), f.GetIP().GetDestination(), dstPort, f.GetDestinationNames(), true),
		Policy:      policyOf(f, outcome, direction),
		Count:       1,
	}
	return "", true
}

// tracked reports whether a trace was taken after the agent's connection
// tracking, in the connection's own direction: a new connection, or a packet of
// an established one that is not a reply.
func tracked(r flowpb.TraceReason) (flowsource.DropReason, bool) {
	switch r {
	case flowpb.TraceReason_NEW, flowpb.TraceReason_ESTABLISHED, flowpb.TraceReason_REOPENED: //nolint:staticcheck // SA1019: named so that every reason an agent may send is classified.
		return "", true
	case flowpb.TraceReason_REPLY, flowpb.TraceReason_RELATED:
		return flowsource.DropReply, false
	case flowpb.TraceReason_TRACE_REASON_UNKNOWN, flowpb.TraceReason_SRV6_ENCAP, flowpb.TraceReason_SRV6_DECAP,
		flowpb.TraceReason_ENCRYPT_OVERLAY: //nolint:staticcheck // SA1019: named so that every reason an agent may send is classified.
		return dropUntracked, false
	}
	return flowsource.DropUnknownEnum, false
}

// outcomeOf maps the verdict. A drop counts as a policy denial only with a policy
// drop reason (POLICY_DENIED, POLICY_DENY).
func outcomeOf(f *flowpb.Flow) (flow.Outcome, flowsource.DropReason, bool) {
	switch v := f.GetVerdict(); v {
	case flowpb.Verdict_FORWARDED, flowpb.Verdict_REDIRECTED:
		return flow.OutcomeAllowed, "", true
	case flowpb.Verdict_AUDIT:
		return flow.OutcomeAudit, "", true
	case flowpb.Verdict_DROPPED:
		switch r := f.GetDropReasonDesc(); r {
		case flowpb.DropReason_POLICY_DENIED, flowpb.DropReason_POLICY_DENY:
			return flow.OutcomeDenied, "", true
		default:
			if _, known := flowpb.DropReason_name[int32(r)]; !known {
				return "", flowsource.DropUnknownEnum, false
			}
			return "", dropNoPolicyVerdict, false
		}
	case flowpb.Verdict_VERDICT_UNKNOWN, flowpb.Verdict_ERROR, flowpb.Verdict_TRACED, flowpb.Verdict_TRANSLATED:
		return "", dropNoPolicyVerdict, false
	default:
		return "", flowsource.DropUnknownEnum, false
	}
}

func transportOf(l4 *flowpb.Layer4) (flow.Transport, uint32, uint32, flowsource.DropReason, bool) {
	switch {
	case l4 == nil:
		return "", 0, 0, flowsource.DropMalformed, false
	case l4.GetTCP() != nil:
		return flow.TransportTCP, l4.GetTCP().GetSourcePort(), l4.GetTCP().GetDestinationPort(), "", true
	case l4.GetUDP() != nil:
		return flow.TransportUDP, l4.GetUDP().GetSourcePort(), l4.GetUDP().GetDestinationPort(), "", true
	case l4.GetSCTP() != nil:
		return flow.TransportSCTP, l4.GetSCTP().GetSourcePort(), l4.GetSCTP().GetDestinationPort(), "", true
	default:
		return "", 0, 0, flowsource.DropUnsupportedProto, false
	}
}

// directionOf maps the traffic direction, and from it the reporting end: Cilium
// observes ingress at the destination and egress at the source.
func directionOf(d flowpb.TrafficDirection) (flow.Direction, flow.Reporter, flowsource.DropReason, bool) {
	switch d {
	case flowpb.TrafficDirection_INGRESS:
		return flow.DirectionIngress, flow.ReporterDestination, "", true
	case flowpb.TrafficDirection_EGRESS:
		return flow.DirectionEgress, flow.ReporterSource, "", true
	case flowpb.TrafficDirection_TRAFFIC_DIRECTION_UNKNOWN:
		return "", "", "", true
	default:
		return "", "", flowsource.DropUnknownEnum, false
	}
}

// endpointOf builds an end from its Hubble endpoint, address, port and the
// names that the agent's FQDN cache holds for its address.
func endpointOf(ep *flowpb.Endpoint, addr string, port uint32, names []string, destination bool) flow.Endpoint {
	e := flow.Endpoint{
		Address:   addr,
		Port:      port,
		Namespace: ep.GetNamespace(),
		Pod:       ep.GetPodName(),
	}
	if id := ep.GetIdentity(); id != 0 {
		e.Identity = strconv.FormatUint(uint64(id), 10)
	}
	if w := ep.GetWorkloads(); len(w) > 0 {
		e.WorkloadKind, e.WorkloadName = w[0].GetKind(), w[0].GetName()
	}
	// The pod's labels, in one allocation: counted first.
	n := 0
	for _, l := range ep.GetLabels() {
		if _, ok := podLabel(l); ok {
			n++
		}
	}
	if n > 0 {
		e.Labels = make([]string, 0, n)
		for _, l := range ep.GetLabels() {
			if kv, ok := podLabel(l); ok {
				e.Labels = append(e.Labels, kv)
			}
		}
	}
	if e.Pod == "" {
		e.External = externalOf(ep, destination)
		// A pod is named by its workload: names that its address had for a
		// lookup are no name of the pod.
		e.Names = dnsNames(names)
	}
	return e
}

// dnsNames returns the names that the agent's FQDN cache gives for an end, as
// a policy names a DNS name: lower case, without the trailing dot, sorted and
// once each, so that one end is the same names in every record. A name that
// a policy cannot hold is dropped: the cache keeps what DNS answers said. The
// slice is new: names is the decoder's, which the next flow reuses.
func dnsNames(names []string) []string {
	var out []string
	for _, n := range names {
		n = strings.TrimSuffix(strings.ToLower(n), ".")
		if validDNSName(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// validDNSName reports whether n is a DNS name that a policy can hold: at
// most 253 characters of labels of a-z, 0-9 and inner "-", each of 1 to 63,
// joined by "."; the first label may be "*" for any one label.
func validDNSName(n string) bool {
	if len(n) > 253 {
		return false
	}
	n = strings.TrimPrefix(n, "*.")
	for {
		label, rest, more := strings.Cut(n, ".")
		if !validDNSLabel(label) {
			return false
		}
		if !more {
			return true
		}
		n = rest
	}
}

func validDNSLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := range len(l) {
		if c := l[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// podLabel returns a Cilium endpoint label as the pod's label key=value, or
// false for a label of another source or one that Cilium adds itself.
func podLabel(l string) (string, bool) {
	kv, ok := strings.CutPrefix(l, "k8s:")
	if !ok || strings.HasPrefix(kv, "io.kubernetes.pod.namespace=") || strings.HasPrefix(kv, "io.cilium.k8s.") {
		return "", false
	}
	return kv, true
}

// externalOf classifies an end with no pod by its reserved identity or labels.
//
// Where the API server runs on a node, that node's host identity (1) carries
// the label reserved:kube-apiserver beside reserved:host: a connection to it is
// a connection to the API server (after Cilium's translation of the kubernetes
// Service, the backend's address and port), and one from it is the node's
// (the kubelet's probes, host-network pods). The label names an address, not a
// port: a host-network server on such a node is seen as the API server too.
//
// The host identity is the node of the agent that reports the flow, and so of
// the pod at the flow's other end: it is host, which Cilium lets into its
// pods whatever the policy. Any other node is remote_node, also a remote node
// that runs the API server (identity 7) seen as a source.
func externalOf(ep *flowpb.Endpoint, destination bool) flow.External {
	if destination && slices.Contains(ep.GetLabels(), "reserved:kube-apiserver") {
		return flow.ExternalAPIServer
	}
	switch ep.GetIdentity() {
	case identityWorld, identityWorldIPv4, identityWorldIPv6:
		return flow.ExternalWorld
	case identityHost:
		return flow.ExternalHost
	case identityRemoteNode:
		return flow.ExternalRemoteNode
	case identityKubeAPI:
		if destination {
			return flow.ExternalAPIServer
		}
		return flow.ExternalRemoteNode
	}
	for _, l := range ep.GetLabels() {
		switch {
		case strings.HasPrefix(l, "reserved:world"):
			return flow.ExternalWorld
		case l == "reserved:host":
			return flow.ExternalHost
		case l == "reserved:remote-node", l == "reserved:kube-apiserver": // a destination with it returned above
			return flow.ExternalRemoteNode
		}
	}
	return flow.ExternalUnknown
}

// policyOf names the policy behind the verdict: the first denying policy of the
// flow's direction for a denial, else the first allowing one.
func policyOf(f *flowpb.Flow, outcome flow.Outcome, direction flow.Direction) flow.PolicyRef {
	var policies []*flowpb.Policy
	switch {
	case outcome != flow.OutcomeAllowed && direction == flow.DirectionEgress:
		policies = f.GetEgressDeniedBy()
	case outcome != flow.OutcomeAllowed:
		policies = f.GetIngressDeniedBy()
	case direction == flow.DirectionEgress:
		policies = f.GetEgressAllowedBy()
	default:
		policies = f.GetIngressAllowedBy()
	}
	if len(policies) == 0 {
		return flow.PolicyRef{}
	}
	p := policies[0]
	return flow.PolicyRef{Kind: p.GetKind(), Namespace: p.GetNamespace(), Name: p.GetName()}
}
