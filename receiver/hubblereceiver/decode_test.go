package hubblereceiver

import (
	"reflect"
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"github.com/cilium/cilium/pkg/hubble/parser/fieldmask"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/wirecodec/wirecodectest"
)

// TestFieldNumbers checks the decoder's field numbers against the generated
// descriptors of Cilium's messages.
func TestFieldNumbers(t *testing.T) {
	flowMsg := (&flowpb.Flow{}).ProtoReflect().Descriptor()
	endpoint := (&flowpb.Endpoint{}).ProtoReflect().Descriptor()
	for _, c := range []struct {
		msg   protoreflect.MessageDescriptor
		field string
		num   protowire.Number
	}{
		{(&observer.GetFlowsResponse{}).ProtoReflect().Descriptor(), "flow", fieldResponseFlow},
		{(&observer.GetFlowsResponse{}).ProtoReflect().Descriptor(), "node_status", fieldResponseNodeStatus},
		{(&observer.GetFlowsResponse{}).ProtoReflect().Descriptor(), "lost_events", fieldResponseLostEvents},
		{(&observer.GetFlowsResponse{}).ProtoReflect().Descriptor(), "node_name", fieldResponseNodeName},
		{flowMsg, "time", fieldFlowTime},
		{flowMsg, "verdict", fieldFlowVerdict},
		{flowMsg, "IP", fieldFlowIP},
		{flowMsg, "l4", fieldFlowL4},
		{flowMsg, "source", fieldFlowSource},
		{flowMsg, "destination", fieldFlowDestination},
		{flowMsg, "Type", fieldFlowType},
		{flowMsg, "source_names", fieldFlowSourceNames},
		{flowMsg, "destination_names", fieldFlowDestinationNames},
		{flowMsg, "event_type", fieldFlowEventType},
		{flowMsg, "traffic_direction", fieldFlowTrafficDirection},
		{flowMsg, "drop_reason_desc", fieldFlowDropReasonDesc},
		{flowMsg, "is_reply", fieldFlowIsReply},
		{flowMsg, "trace_reason", fieldFlowTraceReason},
		{flowMsg, "egress_allowed_by", fieldFlowEgressAllowedBy},
		{flowMsg, "ingress_allowed_by", fieldFlowIngressAllowedBy},
		{flowMsg, "egress_denied_by", fieldFlowEgressDeniedBy},
		{flowMsg, "ingress_denied_by", fieldFlowIngressDeniedBy},
		{(&flowpb.IP{}).ProtoReflect().Descriptor(), "source", fieldIPSource},
		{(&flowpb.IP{}).ProtoReflect().Descriptor(), "destination", fieldIPDestination},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "TCP", fieldL4TCP},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "UDP", fieldL4UDP},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "ICMPv4", fieldL4ICMPv4},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "ICMPv6", fieldL4ICMPv6},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "SCTP", fieldL4SCTP},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "VRRP", fieldL4VRRP},
		{(&flowpb.Layer4{}).ProtoReflect().Descriptor(), "IGMP", fieldL4IGMP},
		{(&flowpb.TCP{}).ProtoReflect().Descriptor(), "source_port", fieldPortSource},
		{(&flowpb.TCP{}).ProtoReflect().Descriptor(), "destination_port", fieldPortDestination},
		{(&flowpb.UDP{}).ProtoReflect().Descriptor(), "source_port", fieldPortSource},
		{(&flowpb.UDP{}).ProtoReflect().Descriptor(), "destination_port", fieldPortDestination},
		{(&flowpb.SCTP{}).ProtoReflect().Descriptor(), "source_port", fieldPortSource},
		{(&flowpb.SCTP{}).ProtoReflect().Descriptor(), "destination_port", fieldPortDestination},
		{endpoint, "identity", fieldEndpointIdentity},
		{endpoint, "namespace", fieldEndpointNamespace},
		{endpoint, "labels", fieldEndpointLabels},
		{endpoint, "pod_name", fieldEndpointPodName},
		{endpoint, "workloads", fieldEndpointWorkloads},
		{(&flowpb.Workload{}).ProtoReflect().Descriptor(), "name", fieldWorkloadName},
		{(&flowpb.Workload{}).ProtoReflect().Descriptor(), "kind", fieldWorkloadKind},
		{(&flowpb.Policy{}).ProtoReflect().Descriptor(), "name", fieldPolicyName},
		{(&flowpb.Policy{}).ProtoReflect().Descriptor(), "namespace", fieldPolicyNamespace},
		{(&flowpb.Policy{}).ProtoReflect().Descriptor(), "kind", fieldPolicyKind},
		{(&flowpb.CiliumEventType{}).ProtoReflect().Descriptor(), "type", fieldEventTypeType},
	} {
		fd := c.msg.Fields().ByName(protoreflect.Name(c.field))
		if fd == nil || fd.Number() != c.num {
			t.Errorf("%s.%s: the decoder reads field %d, the schema has %v", c.msg.FullName(), c.field, c.num, fd)
		}
	}
}

// allResponses are the fixture's messages, flows with names for their ends,
// and a real agent's flows.
func allResponses(tb testing.TB) []*observer.GetFlowsResponse {
	tb.Helper()
	out := append(loadFixtures(tb), namedResponses(tb)...)
	for _, name := range realAgentRecordings {
		for _, f := range loadRealAgent(tb, name) {
			out = append(out, &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f}})
		}
	}
	return out
}

// conversion is what the receiver makes of one message: a flow's record or
// drop reason, or the relay's news.
type conversion struct {
	Reason     flowsource.DropReason
	OK         bool
	Record     flow.Record
	NodeStatus string
	LostEvents string
}

// reference decodes wire with the generated code, as the receiver did before
// it had a decoder of its own.
func reference(wire []byte) (conversion, error) {
	var resp observer.GetFlowsResponse
	if err := proto.Unmarshal(wire, &resp); err != nil {
		return conversion{}, err
	}
	return convertResponse(resp.GetFlow(), resp.GetNodeStatus(), resp.GetLostEvents()), nil
}

// fast decodes wire with the receiver's decoder.
func fast(resp *response, wire []byte) (conversion, error) {
	if err := resp.DecodeWire(wire); err != nil {
		return conversion{}, err
	}
	return convertResponse(resp.flow, resp.nodeStatus, resp.lostEvents), nil
}

func convertResponse(f *flowpb.Flow, ns proto.Message, lost proto.Message) conversion {
	var c conversion
	switch {
	case f != nil:
		c.Reason, c.OK = convertFlow(f, &c.Record)
	case ns != nil && !reflect.ValueOf(ns).IsNil():
		c.NodeStatus = prototext(ns)
	case lost != nil && !reflect.ValueOf(lost).IsNil():
		c.LostEvents = prototext(lost)
	}
	return c
}

func prototext(m proto.Message) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	return string(b)
}

// TestDecodeMatchesGenerated decodes every fixture, in every valid encoding
// of it (fields out of order, packed and unpacked, unknown fields, a message
// in parts), with the generated code and with the receiver's decoder, one
// decoder for all in turn as in a stream: the records must be equal field by
// field.
func TestDecodeMatchesGenerated(t *testing.T) {
	resp := &response{dec: newFlowDecoder()}
	wirecodectest.Differential(t, allResponses(t), reference, func(wire []byte) (conversion, error) { return fast(resp, wire) })
}

// TestFieldMaskKeepsWhatIsRead applies the receiver's field mask as Cilium's
// observer does to every fixture flow: each gives the same record or drop
// reason as the whole flow.
func TestFieldMaskKeepsWhatIsRead(t *testing.T) {
	mask, err := fieldmask.New(&fieldmaskpb.FieldMask{Paths: fieldMaskPaths})
	if err != nil || !mask.Active() {
		t.Fatalf("the receiver's field mask is not one Cilium takes: %v", err)
	}
	maskedSize, wholeSize := 0, 0
	for i, m := range allResponses(t) {
		f := m.GetFlow()
		if f == nil {
			continue
		}
		masked := &flowpb.Flow{}
		mask.Alloc(masked.ProtoReflect())
		mask.Copy(masked.ProtoReflect(), f.ProtoReflect())
		maskedSize, wholeSize = maskedSize+proto.Size(masked), wholeSize+proto.Size(f)
		var want, got flow.Record
		wantReason, wantOK := convertFlow(f, &want)
		gotReason, gotOK := convertFlow(masked, &got)
		if gotReason != wantReason || gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("flow %d masked: %v %v %+v\nwhole: %v %v %+v", i, gotReason, gotOK, got, wantReason, wantOK, want)
		}
	}
	// The fixture's synthetic flows hold only what the receiver reads; a real
	// agent's hold more.
	if maskedSize >= wholeSize {
		t.Errorf("masked flows are %d bytes, whole ones %d", maskedSize, wholeSize)
	}
	t.Logf("the field mask keeps %d of %d bytes", maskedSize, wholeSize)
}

// FuzzDecode feeds the decoder arbitrary bytes, seeded with every fixture and
// flow with names in every encoding and the first flows of each real agent's
// recording as sent (the corpus stays small enough to start fuzzing at once):
// it never panics, and whatever the generated code decodes, the decoder
// decodes to the same record.
func FuzzDecode(f *testing.F) {
	seeds := wirecodectest.Seeds(f, append(loadFixtures(f), namedResponses(f)...))
	for _, name := range realAgentRecordings {
		for _, fl := range loadRealAgent(f, name)[:100] {
			resp := &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: fl}}
			seeds = append(seeds, wirecodectest.Variants(f, resp)[0].Wire)
		}
	}
	resp := &response{dec: newFlowDecoder()}
	wirecodectest.Fuzz(f, seeds, reference, func(wire []byte) (conversion, error) { return fast(resp, wire) })
}
