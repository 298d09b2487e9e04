package goldmanereceiver

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/wirecodec/wirecodectest"
)

// TestFieldNumbers checks the decoder's field numbers against the generated
// descriptors of Goldmane's messages.
func TestFieldNumbers(t *testing.T) {
	flowMsg := (&pb.Flow{}).ProtoReflect().Descriptor()
	key := (&pb.FlowKey{}).ProtoReflect().Descriptor()
	hit := (&pb.PolicyHit{}).ProtoReflect().Descriptor()
	trace := (&pb.PolicyTrace{}).ProtoReflect().Descriptor()
	for _, c := range []struct {
		msg   protoreflect.MessageDescriptor
		field string
		num   protowire.Number
	}{
		{(&pb.FlowResult{}).ProtoReflect().Descriptor(), "flow", fieldResultFlow},
		{flowMsg, "Key", fieldFlowKey},
		{flowMsg, "start_time", fieldFlowStartTime},
		{flowMsg, "source_labels", fieldFlowSourceLabels},
		{flowMsg, "dest_labels", fieldFlowDestLabels},
		{flowMsg, "num_connections_started", fieldFlowNumConnectionsStarted},
		{key, "source_name", fieldKeySourceName},
		{key, "source_namespace", fieldKeySourceNamespace},
		{key, "source_type", fieldKeySourceType},
		{key, "dest_name", fieldKeyDestName},
		{key, "dest_namespace", fieldKeyDestNamespace},
		{key, "dest_type", fieldKeyDestType},
		{key, "dest_port", fieldKeyDestPort},
		{key, "proto", fieldKeyProto},
		{key, "reporter", fieldKeyReporter},
		{key, "action", fieldKeyAction},
		{key, "policies", fieldKeyPolicies},
		{trace, "enforced_policies", fieldTraceEnforced},
		{trace, "pending_policies", fieldTracePending},
		{hit, "kind", fieldHitKind},
		{hit, "namespace", fieldHitNamespace},
		{hit, "name", fieldHitName},
		{hit, "action", fieldHitAction},
		{hit, "trigger", fieldHitTrigger},
	} {
		fd := c.msg.Fields().ByName(protoreflect.Name(c.field))
		if fd == nil || fd.Number() != c.num {
			t.Errorf("%s.%s: the decoder reads field %d, the schema has %v", c.msg.FullName(), c.field, c.num, fd)
		}
	}
}

// conversion is what the receiver makes of one message.
type conversion struct {
	Reason flowsource.DropReason
	OK     bool
	Record flow.Record
	Start  int64
}

func convertResult(f *pb.Flow) conversion {
	c := conversion{Start: f.GetStartTime()}
	c.Reason, c.OK = convertFlow(f, &c.Record)
	return c
}

// reference decodes wire with the generated code, as the receiver did before
// it had a decoder of its own.
func reference(wire []byte) (conversion, error) {
	var res pb.FlowResult
	if err := proto.Unmarshal(wire, &res); err != nil {
		return conversion{}, err
	}
	return convertResult(res.GetFlow()), nil
}

func fast(res *result, wire []byte) (conversion, error) {
	if err := res.DecodeWire(wire); err != nil {
		return conversion{}, err
	}
	return convertResult(res.flow), nil
}

// withTriggers is the fixture with an end-of-tier hit whose trigger is sent
// in parts and nested, so that the triggers' merging is decoded too.
func withTriggers(tb testing.TB) []*pb.FlowResult {
	tb.Helper()
	out := loadFixtures(tb)
	extra := proto.Clone(out[0]).(*pb.FlowResult)
	key := extra.GetFlow().GetKey()
	key.Action = pb.Action_Deny
	key.Policies = &pb.PolicyTrace{EnforcedPolicies: []*pb.PolicyHit{{
		Kind: pb.PolicyKind_EndOfTier, Action: pb.Action_Deny, Tier: "default",
		Trigger: &pb.PolicyHit{Kind: pb.PolicyKind_NetworkPolicy, Namespace: "shop", Name: "api", Action: pb.Action_Deny,
			Trigger: &pb.PolicyHit{Name: "deeper"}},
	}}, PendingPolicies: []*pb.PolicyHit{{Kind: pb.PolicyKind_StagedNetworkPolicy, Namespace: "shop", Name: "staged", Action: pb.Action_Allow}}}
	return append(out, extra)
}

// TestDecodeMatchesGenerated decodes every fixture, in every valid encoding
// of it, with the generated code and with the receiver's decoder (one for
// all, as in a stream): the records must be equal field by field, and a
// record keeps its labels when the next message is decoded.
func TestDecodeMatchesGenerated(t *testing.T) {
	res := &result{dec: newFlowDecoder()}
	msgs := withTriggers(t)
	got := wirecodectest.Differential(t, msgs, reference, func(wire []byte) (conversion, error) { return fast(res, wire) })
	var want []conversion
	for _, m := range msgs {
		for _, v := range wirecodectest.Variants(t, m) {
			c, _ := reference(v.Wire)
			want = append(want, c)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("records changed when later messages were decoded")
	}
}

// FuzzDecode feeds the decoder arbitrary bytes, seeded with every fixture in
// every encoding: it never panics, and whatever the generated code decodes,
// the decoder decodes to the same record.
func FuzzDecode(f *testing.F) {
	res := &result{dec: newFlowDecoder()}
	wirecodectest.Fuzz(f, wirecodectest.Seeds(f, withTriggers(f)), reference,
		func(wire []byte) (conversion, error) { return fast(res, wire) })
}
