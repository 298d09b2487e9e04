package hubblereceiver

import (
	flowpb "github.com/cilium/cilium/api/v1/flow"
	relaypb "github.com/cilium/cilium/api/v1/relay"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// Field numbers of the messages the decoder reads (cilium's flow.proto and
// observer.proto); decode_test.go checks them against the generated
// descriptors.
const (
	fieldResponseFlow       protowire.Number = 1
	fieldResponseNodeStatus protowire.Number = 2
	fieldResponseLostEvents protowire.Number = 3
	fieldResponseNodeName   protowire.Number = 1000

	fieldFlowTime             protowire.Number = 1
	fieldFlowVerdict          protowire.Number = 2
	fieldFlowIP               protowire.Number = 5
	fieldFlowL4               protowire.Number = 6
	fieldFlowSource           protowire.Number = 8
	fieldFlowDestination      protowire.Number = 9
	fieldFlowType             protowire.Number = 10
	fieldFlowSourceNames      protowire.Number = 13
	fieldFlowDestinationNames protowire.Number = 14
	fieldFlowEventType        protowire.Number = 19
	fieldFlowTrafficDirection protowire.Number = 22
	fieldFlowDropReasonDesc   protowire.Number = 25
	fieldFlowIsReply          protowire.Number = 26
	fieldFlowTraceReason      protowire.Number = 36
	fieldFlowEgressAllowedBy  protowire.Number = 21001
	fieldFlowIngressAllowedBy protowire.Number = 21002
	fieldFlowEgressDeniedBy   protowire.Number = 21004
	fieldFlowIngressDeniedBy  protowire.Number = 21005

	fieldIPSource      protowire.Number = 1
	fieldIPDestination protowire.Number = 2

	fieldL4TCP    protowire.Number = 1
	fieldL4UDP    protowire.Number = 2
	fieldL4ICMPv4 protowire.Number = 3
	fieldL4ICMPv6 protowire.Number = 4
	fieldL4SCTP   protowire.Number = 5
	fieldL4VRRP   protowire.Number = 6
	fieldL4IGMP   protowire.Number = 7
	// The ports of TCP, UDP and SCTP alike.
	fieldPortSource      protowire.Number = 1
	fieldPortDestination protowire.Number = 2

	fieldEndpointIdentity  protowire.Number = 2
	fieldEndpointNamespace protowire.Number = 3
	fieldEndpointLabels    protowire.Number = 4
	fieldEndpointPodName   protowire.Number = 5
	fieldEndpointWorkloads protowire.Number = 6

	fieldWorkloadName protowire.Number = 1
	fieldWorkloadKind protowire.Number = 2

	fieldPolicyName      protowire.Number = 1
	fieldPolicyNamespace protowire.Number = 2
	fieldPolicyKind      protowire.Number = 5

	fieldEventTypeType protowire.Number = 1

	fieldTimestampSeconds protowire.Number = 1
	fieldTimestampNanos   protowire.Number = 2

	fieldBoolValue protowire.Number = 1
)

// Layer 4 protocols that the receiver does not read past their kind: the
// flow's Layer4 names them, with no content, so that it is not taken for TCP.
var (
	otherICMPv4 = &flowpb.Layer4_ICMPv4{ICMPv4: &flowpb.ICMPv4{}}
	otherICMPv6 = &flowpb.Layer4_ICMPv6{ICMPv6: &flowpb.ICMPv6{}}
	otherVRRP   = &flowpb.Layer4_VRRP{VRRP: &flowpb.VRRP{}}
	otherIGMP   = &flowpb.Layer4_IGMP{IGMP: &flowpb.IGMP{}}
)

// response is one GetFlowsResponse as the receiver reads it: a flow with only
// the fields that convertFlow reads, decoded into memory that the next
// message reuses, or the relay's news (lost events, node status), which is
// rare and decoded in full.
type response struct {
	dec        *flowDecoder
	flow       *flowpb.Flow
	nodeStatus *relaypb.NodeStatusEvent
	lostEvents *flowpb.LostEvent
	// nodeName is the node the message came from, as the relay or the
	// node's Hubble server names it; read for lost events only (a flow's
	// would be a string per flow that learning has no use for).
	nodeName string
}

// DecodeWire decodes the message in b, replacing the previous one.
func (r *response) DecodeWire(b []byte) error {
	r.flow, r.nodeStatus, r.lostEvents, r.nodeName = nil, nil, nil, ""
	var nodeName []byte
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if !rd.Message() {
			continue
		}
		var err error
		// The three are a oneof: the last one on the wire wins, and a second
		// of the same one merges into the first.
		switch rd.Num {
		case fieldResponseFlow:
			r.nodeStatus, r.lostEvents = nil, nil
			if r.flow == nil {
				r.flow = r.dec.newFlow()
			}
			err = r.dec.flow(rd.Bytes, r.flow)
		case fieldResponseNodeStatus:
			r.flow, r.lostEvents = nil, nil
			if r.nodeStatus == nil {
				r.nodeStatus = &relaypb.NodeStatusEvent{}
			}
			err = mergeOptions.Unmarshal(rd.Bytes, r.nodeStatus)
		case fieldResponseLostEvents:
			r.flow, r.nodeStatus = nil, nil
			if r.lostEvents == nil {
				r.lostEvents = &flowpb.LostEvent{}
			}
			err = mergeOptions.Unmarshal(rd.Bytes, r.lostEvents)
		case fieldResponseNodeName:
			nodeName = rd.Bytes
		default: // time: not read
		}
		if err != nil {
			return err
		}
	}
	if r.lostEvents != nil && len(nodeName) > 0 {
		r.nodeName = string(nodeName)
	}
	return rd.Err()
}

var mergeOptions = proto.UnmarshalOptions{Merge: true}

// flowDecoder decodes the fields of a Flow that convertFlow reads, and skips
// the rest on the wire. It decodes into memory of its own that each message
// reuses, and takes strings from an Interner, so that a flow costs no
// allocation once its strings were seen. It is used by the one goroutine that
// reads the stream, and what it decoded is valid until the next message.
type flowDecoder struct {
	strings *wirecodec.Interner

	f         flowpb.Flow
	time      timestamppb.Timestamp
	ip        flowpb.IP
	l4        flowpb.Layer4
	tcp       flowpb.Layer4_TCP
	udp       flowpb.Layer4_UDP
	sctp      flowpb.Layer4_SCTP
	tcpPorts  flowpb.TCP
	udpPorts  flowpb.UDP
	sctpPorts flowpb.SCTP
	src, dst  flowpb.Endpoint
	eventType flowpb.CiliumEventType
	isReply   wrapperspb.BoolValue
	workloads pool[flowpb.Workload]
	policies  pool[flowpb.Policy]
}

func newFlowDecoder() *flowDecoder {
	d := &flowDecoder{strings: wirecodec.NewInterner(wirecodec.DefaultInternerSize)}
	d.tcp.TCP, d.udp.UDP, d.sctp.SCTP = &d.tcpPorts, &d.udpPorts, &d.sctpPorts
	return d
}

// newFlow returns the decoder's flow, emptied. The names keep their backing
// arrays, as the ends' labels do.
func (d *flowDecoder) newFlow() *flowpb.Flow {
	d.f = flowpb.Flow{SourceNames: d.f.SourceNames[:0], DestinationNames: d.f.DestinationNames[:0]}
	d.workloads.reset()
	d.policies.reset()
	return &d.f
}

func (d *flowDecoder) flow(b []byte, f *flowpb.Flow) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case rd.IsVarint():
			d.flowVarint(&rd, f)
		case !rd.Message():
		case rd.Num == fieldFlowTime:
			if f.Time == nil {
				d.time.Seconds, d.time.Nanos = 0, 0
				f.Time = &d.time
			}
			err = timestamp(rd.Bytes, f.Time)
		case rd.Num == fieldFlowIP:
			if f.IP == nil {
				d.ip.Source, d.ip.Destination = "", ""
				f.IP = &d.ip
			}
			err = d.addresses(rd.Bytes, f.IP)
		case rd.Num == fieldFlowL4:
			if f.L4 == nil {
				d.l4.Protocol = nil
				f.L4 = &d.l4
			}
			err = d.layer4(rd.Bytes, f.L4)
		case rd.Num == fieldFlowSource:
			if f.Source == nil {
				resetEndpoint(&d.src)
				f.Source = &d.src
			}
			err = d.endpoint(rd.Bytes, f.Source)
		case rd.Num == fieldFlowDestination:
			if f.Destination == nil {
				resetEndpoint(&d.dst)
				f.Destination = &d.dst
			}
			err = d.endpoint(rd.Bytes, f.Destination)
		case rd.Num == fieldFlowSourceNames:
			f.SourceNames, err = d.appendString(rd.Bytes, f.SourceNames)
		case rd.Num == fieldFlowDestinationNames:
			f.DestinationNames, err = d.appendString(rd.Bytes, f.DestinationNames)
		case rd.Num == fieldFlowEventType:
			if f.EventType == nil {
				d.eventType.Type = 0
				f.EventType = &d.eventType
			}
			err = eventType(rd.Bytes, f.EventType)
		case rd.Num == fieldFlowIsReply:
			if f.IsReply == nil {
				d.isReply.Value = false
				f.IsReply = &d.isReply
			}
			err = boolValue(rd.Bytes, f.IsReply)
		case rd.Num == fieldFlowEgressAllowedBy:
			f.EgressAllowedBy, err = d.policy(rd.Bytes, f.EgressAllowedBy)
		case rd.Num == fieldFlowIngressAllowedBy:
			f.IngressAllowedBy, err = d.policy(rd.Bytes, f.IngressAllowedBy)
		case rd.Num == fieldFlowEgressDeniedBy:
			f.EgressDeniedBy, err = d.policy(rd.Bytes, f.EgressDeniedBy)
		case rd.Num == fieldFlowIngressDeniedBy:
			f.IngressDeniedBy, err = d.policy(rd.Bytes, f.IngressDeniedBy)
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

// flowVarint sets the flow's enum fields: proto3 enums are open, so a value
// the schema does not name is kept, for convertFlow to count as unknown.
func (d *flowDecoder) flowVarint(rd *wirecodec.Reader, f *flowpb.Flow) {
	v := int32(rd.Varint)
	switch rd.Num {
	case fieldFlowVerdict:
		f.Verdict = flowpb.Verdict(v)
	case fieldFlowType:
		f.Type = flowpb.FlowType(v)
	case fieldFlowTrafficDirection:
		f.TrafficDirection = flowpb.TrafficDirection(v)
	case fieldFlowDropReasonDesc:
		f.DropReasonDesc = flowpb.DropReason(v)
	case fieldFlowTraceReason:
		f.TraceReason = flowpb.TraceReason(v)
	default: // a varint that the receiver does not read
	}
}

func timestamp(b []byte, t *timestamppb.Timestamp) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		switch {
		case !rd.IsVarint():
		case rd.Num == fieldTimestampSeconds:
			t.Seconds = int64(rd.Varint)
		case rd.Num == fieldTimestampNanos:
			t.Nanos = int32(rd.Varint)
		}
	}
	return rd.Err()
}

func (d *flowDecoder) addresses(b []byte, ip *flowpb.IP) error {
	return d.twoStrings(b, fieldIPSource, &ip.Source, fieldIPDestination, &ip.Destination)
}

// twoStrings decodes a message of which the decoder reads two strings: field
// n1 into s1, n2 into s2.
func (d *flowDecoder) twoStrings(b []byte, n1 protowire.Number, s1 *string, n2 protowire.Number, s2 *string) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case !rd.Message():
		case rd.Num == n1:
			*s1, err = d.strings.String(rd.Bytes)
		case rd.Num == n2:
			*s2, err = d.strings.String(rd.Bytes)
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

// layer4 decodes the protocol, a oneof: the last on the wire wins, and a
// second of the same one merges into the first.
func (d *flowDecoder) layer4(b []byte, l4 *flowpb.Layer4) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if !rd.Message() {
			continue
		}
		var err error
		switch rd.Num {
		case fieldL4TCP:
			if l4.Protocol != &d.tcp {
				d.tcpPorts.SourcePort, d.tcpPorts.DestinationPort = 0, 0
				l4.Protocol = &d.tcp
			}
			err = ports(rd.Bytes, &d.tcpPorts.SourcePort, &d.tcpPorts.DestinationPort)
		case fieldL4UDP:
			if l4.Protocol != &d.udp {
				d.udpPorts.SourcePort, d.udpPorts.DestinationPort = 0, 0
				l4.Protocol = &d.udp
			}
			err = ports(rd.Bytes, &d.udpPorts.SourcePort, &d.udpPorts.DestinationPort)
		case fieldL4SCTP:
			if l4.Protocol != &d.sctp {
				d.sctpPorts.SourcePort, d.sctpPorts.DestinationPort = 0, 0
				l4.Protocol = &d.sctp
			}
			err = ports(rd.Bytes, &d.sctpPorts.SourcePort, &d.sctpPorts.DestinationPort)
		case fieldL4ICMPv4:
			l4.Protocol = otherICMPv4
		case fieldL4ICMPv6:
			l4.Protocol = otherICMPv6
		case fieldL4VRRP:
			l4.Protocol = otherVRRP
		case fieldL4IGMP:
			l4.Protocol = otherIGMP

		default: // a protocol this schema does not know: kept unknown, as protobuf does
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

func ports(b []byte, src, dst *uint32) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		switch {
		case !rd.IsVarint():
		case rd.Num == fieldPortSource:
			*src = uint32(rd.Varint)
		case rd.Num == fieldPortDestination:
			*dst = uint32(rd.Varint)
		}
	}
	return rd.Err()
}

func resetEndpoint(ep *flowpb.Endpoint) {
	ep.Identity, ep.Namespace, ep.PodName = 0, "", ""
	ep.Labels, ep.Workloads = ep.Labels[:0], ep.Workloads[:0]
}

func (d *flowDecoder) endpoint(b []byte, ep *flowpb.Endpoint) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case rd.Num == fieldEndpointIdentity:
			if rd.IsVarint() {
				ep.Identity = uint32(rd.Varint)
			}
		case !rd.Message():
		case rd.Num == fieldEndpointNamespace:
			ep.Namespace, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldEndpointPodName:
			ep.PodName, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldEndpointLabels:
			ep.Labels, err = d.appendString(rd.Bytes, ep.Labels)
		case rd.Num == fieldEndpointWorkloads:
			w := d.workloads.get()
			w.Name, w.Kind = "", ""
			err = d.workload(rd.Bytes, w)
			ep.Workloads = append(ep.Workloads, w)
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

// appendString appends b, one item of a repeated string field, to list.
func (d *flowDecoder) appendString(b []byte, list []string) ([]string, error) {
	s, err := d.strings.String(b)
	if err != nil {
		return list, err
	}
	return append(list, s), nil
}

func (d *flowDecoder) workload(b []byte, w *flowpb.Workload) error {
	return d.twoStrings(b, fieldWorkloadName, &w.Name, fieldWorkloadKind, &w.Kind)
}

// policy decodes one policy of a repeated field and appends it to list.
func (d *flowDecoder) policy(b []byte, list []*flowpb.Policy) ([]*flowpb.Policy, error) {
	p := d.policies.get()
	p.Name, p.Namespace, p.Kind = "", "", ""
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case !rd.Message():
		case rd.Num == fieldPolicyName:
			p.Name, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldPolicyNamespace:
			p.Namespace, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldPolicyKind:
			p.Kind, err = d.strings.String(rd.Bytes)
		}
		if err != nil {
			return list, err
		}
	}
	return append(list, p), rd.Err()
}

func eventType(b []byte, et *flowpb.CiliumEventType) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if rd.IsVarint() && rd.Num == fieldEventTypeType {
			et.Type = int32(rd.Varint)
		}
	}
	return rd.Err()
}

func boolValue(b []byte, v *wrapperspb.BoolValue) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if rd.IsVarint() && rd.Num == fieldBoolValue {
			v.Value = rd.Varint != 0
		}
	}
	return rd.Err()
}

// pool hands out messages that the next flow reuses: a flow's workloads and
// policies are few, and a pool of them costs no allocation per flow.
type pool[T any] struct {
	items []*T
	used  int
}

func (p *pool[T]) reset() { p.used = 0 }

// get returns a message of the pool; the caller empties the fields it sets.
func (p *pool[T]) get() *T {
	if p.used == len(p.items) {
		p.items = append(p.items, new(T))
	}
	t := p.items[p.used]
	p.used++
	return t
}

// fieldMaskPaths are the flow fields that the decoder reads, which the
// receiver asks Hubble for (field_mask). The ends, addresses and event type
// are asked for whole, though the decoder reads most but not all of their
// fields: Cilium copies each path of a mask by reflection for every flow it
// sends, and whole messages cost it half as much as their fields one by one,
// for a few bytes more. A mask cannot reach into a repeated field: the
// policies are whole too; so is l4, whose protocol alone tells an ICMP flow
// from a malformed one. Hubble takes a response's time and node name from
// the masked flow, and the relay orders the nodes' flows by that time:
// node_name is asked for too.
var fieldMaskPaths = []string{
	"time", "node_name", "verdict", "drop_reason_desc", "Type", "traffic_direction", "trace_reason", "is_reply",
	"event_type", "IP", "l4", "source", "destination", "source_names", "destination_names",
	"egress_allowed_by", "ingress_allowed_by", "egress_denied_by", "ingress_denied_by",
}
