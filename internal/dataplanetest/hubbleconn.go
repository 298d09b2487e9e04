package dataplanetest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// End is a pod at one end of a connection, with what each data plane
// reports of it.
type End struct {
	Namespace, Pod, IP string
	// Workload names the pod's Deployment; its pods carry app=<Workload>.
	Workload string
	// Identity is the pod's Cilium security identity (Hubble).
	Identity uint32
	// ServiceAccount is the pod's service account, which names its Istio
	// principal (ztunnel); the Workload's name when empty.
	ServiceAccount string
}

func (e End) endpoint() *flowpb.Endpoint {
	return &flowpb.Endpoint{ID: e.Identity, Identity: e.Identity, ClusterName: "default", Namespace: e.Namespace, PodName: e.Pod,
		Labels:    []string{"k8s:app=" + e.Workload, "k8s:io.kubernetes.pod.namespace=" + e.Namespace},
		Workloads: []*flowpb.Workload{{Name: e.Workload, Kind: "Deployment"}}}
}

// Connection says what a Cilium agent does with a TCP connection whose
// destination has an ingress policy.
type Connection int

const (
	// ConnectionAllowed: the policy allows it; the client sends "ok"'s
	// request, the server answers and closes.
	ConnectionAllowed Connection = iota
	// ConnectionDenied: the policy drops the SYN and its two retransmits.
	ConnectionDenied
	// ConnectionUnenforced: no policy selects the destination for ingress:
	// the agent judges nothing, and emits no policy verdict.
	ConnectionUnenforced
	// ConnectionDryRunDenied: a policy in monitor mode does not allow it,
	// and the data plane lets it through. Istio's dry-run AuthorizationPolicy
	// makes ztunnel log its decision; Cilium and Calico have no policy object
	// in monitor mode, so for them it is ConnectionUnenforced.
	ConnectionDryRunDenied
)

// ingressPolicy is the name that the enforcer gives the ingress policy of
// dst's Deployment.
func ingressPolicy(dst End) string { return "deployment-" + dst.Workload + "-ingress" }

// NewHubbleConnection is what a real Cilium agent (v1.20, monitor aggregation
// none) emits for one TCP connection between two pods of its node, in order:
// a trace at the sender's endpoint (FROM_ENDPOINT, before connection
// tracking: no direction, no reason) and one at the receiver's (TO_ENDPOINT,
// with the conntrack reason NEW, ESTABLISHED or REPLY) for each packet, the
// policy verdict of the first packet, and for a denied connection the verdict
// and the drop notification of each attempt. TestFakeConnectionsMatchTheRealAgent
// holds it to the agent's recording.
func NewHubbleConnection(src, dst End, srcPort, dstPort uint32, c Connection) []*observer.GetFlowsResponse {
	b := &connBuilder{src: src, dst: dst, srcPort: srcPort, dstPort: dstPort, t: time.Now()}
	if c == ConnectionDenied {
		for range 3 {
			b.fromEndpoint(true, syn)
			b.deniedVerdict()
			b.dropNotification()
		}
		return b.out
	}
	b.fromEndpoint(true, syn)
	if c == ConnectionAllowed {
		b.allowedVerdict()
	}
	b.toEndpoint(true, syn, flowpb.TraceReason_NEW)
	for _, p := range []struct {
		fromClient bool
		flags      *flowpb.TCPFlags
	}{
		{false, synAck}, {true, ack}, {false, pshAck}, {true, ack}, {false, finAck}, {true, finAck}, {false, ack},
	} {
		b.fromEndpoint(p.fromClient, p.flags)
		reason := flowpb.TraceReason_ESTABLISHED
		if !p.fromClient {
			reason = flowpb.TraceReason_REPLY
		}
		b.toEndpoint(p.fromClient, p.flags, reason)
	}
	return b.out
}

var (
	syn    = &flowpb.TCPFlags{SYN: true}
	synAck = &flowpb.TCPFlags{SYN: true, ACK: true}
	ack    = &flowpb.TCPFlags{ACK: true}
	pshAck = &flowpb.TCPFlags{PSH: true, ACK: true}
	finAck = &flowpb.TCPFlags{FIN: true, ACK: true}
)

// policyDenied is Cilium's drop reason code for POLICY_DENIED.
const policyDenied = 133

// flowUUIDs numbers the fake flows' uuids.
var flowUUIDs atomic.Uint64

// connBuilder appends the events of one connection.
type connBuilder struct {
	src, dst         End
	srcPort, dstPort uint32
	t                time.Time
	out              []*observer.GetFlowsResponse
}

// packet is a new event of a packet from the client (or the server).
func (b *connBuilder) packet(fromClient bool, flags *flowpb.TCPFlags) *flowpb.Flow {
	b.t = b.t.Add(3 * time.Microsecond)
	from, to, fromPort, toPort := b.src, b.dst, b.srcPort, b.dstPort
	if !fromClient {
		from, to, fromPort, toPort = b.dst, b.src, b.dstPort, b.srcPort
	}
	f := &flowpb.Flow{
		Time:     timestamppb.New(b.t),
		Uuid:     fmt.Sprintf("00000000-0000-4000-8000-%012x", flowUUIDs.Add(1)),
		Emitter:  &flowpb.Emitter{Name: "Hubble"},
		Verdict:  flowpb.Verdict_FORWARDED,
		Ethernet: &flowpb.Ethernet{Source: "02:00:00:00:00:01", Destination: "02:00:00:00:00:02"},
		IP:       &flowpb.IP{Source: from.IP, Destination: to.IP, IpVersion: flowpb.IPVersion_IPv4},
		L4: &flowpb.Layer4{Protocol: &flowpb.Layer4_TCP{TCP: &flowpb.TCP{SourcePort: fromPort, DestinationPort: toPort,
			Flags: flags}}},
		Source: from.endpoint(), Destination: to.endpoint(),
		Type: flowpb.FlowType_L3_L4, NodeName: "worker-1",
		Summary: "TCP Flags: " + flagNames(flags), //nolint:staticcheck // SA1019: Cilium 1.20's agent still sets it, and the fake emits what the agent emits.
	}
	b.out = append(b.out, &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f},
		NodeName: f.NodeName, Time: f.Time})
	return f
}

// fromEndpoint is the trace where the packet leaves its sender's endpoint.
func (b *connBuilder) fromEndpoint(fromClient bool, flags *flowpb.TCPFlags) {
	f := b.packet(fromClient, flags)
	f.EventType = &flowpb.CiliumEventType{Type: 4, SubType: 5}
	f.TraceObservationPoint = flowpb.TraceObservationPoint_FROM_ENDPOINT
}

// toEndpoint is the trace where the packet reaches its receiver's endpoint.
func (b *connBuilder) toEndpoint(fromClient bool, flags *flowpb.TCPFlags, reason flowpb.TraceReason) {
	f := b.packet(fromClient, flags)
	f.EventType = &flowpb.CiliumEventType{Type: 4}
	f.TrafficDirection = flowpb.TrafficDirection_EGRESS
	f.TraceObservationPoint = flowpb.TraceObservationPoint_TO_ENDPOINT
	f.TraceReason = reason
	f.IsReply = wrapperspb.Bool(reason == flowpb.TraceReason_REPLY)
	if reason == flowpb.TraceReason_REPLY {
		f.Reply = true //nolint:staticcheck // the agent still sets the deprecated field
	}
	f.Interface = &flowpb.NetworkInterface{Index: 38, Name: "lxc0123456789ab"}
}

// allowedVerdict is the destination's policy verdict that lets the SYN in.
func (b *connBuilder) allowedVerdict() {
	f := b.packet(true, syn)
	f.EventType = &flowpb.CiliumEventType{Type: 5}
	f.TrafficDirection = flowpb.TrafficDirection_INGRESS
	f.PolicyMatchType = 2 // L3 and L4
	f.IsReply = wrapperspb.Bool(false)
	f.IngressAllowedBy = []*flowpb.Policy{{Name: "allow", Namespace: b.dst.Namespace, Kind: "NetworkPolicy", Revision: 2,
		Labels: []string{"k8s:io.cilium.k8s.policy.derived-from=NetworkPolicy", "k8s:io.cilium.k8s.policy.name=allow"}}}
	f.PolicyLog = []string{""}
}

// deniedVerdict is the destination's policy verdict that drops the SYN.
func (b *connBuilder) deniedVerdict() {
	f := b.packet(true, syn)
	f.EventType = &flowpb.CiliumEventType{Type: 5}
	b.dropped(f)
}

// dropNotification is the datapath's notification of the same drop.
func (b *connBuilder) dropNotification() {
	f := b.packet(true, syn)
	f.EventType = &flowpb.CiliumEventType{Type: 1, SubType: policyDenied}
	f.File = &flowpb.FileInfo{Name: "bpf_lxc.c", Line: 2410}
	b.dropped(f)
}

func (b *connBuilder) dropped(f *flowpb.Flow) {
	f.Verdict = flowpb.Verdict_DROPPED
	f.DropReason = policyDenied //nolint:staticcheck // the agent still sets the deprecated field
	f.DropReasonDesc = flowpb.DropReason_POLICY_DENIED
	f.TrafficDirection = flowpb.TrafficDirection_INGRESS
}

// flagNames writes TCP flags as Hubble's summary does: "SYN, ACK".
func flagNames(f *flowpb.TCPFlags) string {
	var names []string
	for _, n := range []struct {
		set  bool
		name string
	}{{f.GetSYN(), "SYN"}, {f.GetPSH(), "PSH"}, {f.GetFIN(), "FIN"}, {f.GetACK(), "ACK"}} {
		if n.set {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ", ")
}
