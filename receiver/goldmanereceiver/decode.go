package goldmanereceiver

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// Field numbers of the messages the decoder reads (goldmane.proto);
// decode_test.go checks them against the generated descriptors.
const (
	fieldResultFlow protowire.Number = 2

	fieldFlowKey                   protowire.Number = 1
	fieldFlowStartTime             protowire.Number = 2
	fieldFlowSourceLabels          protowire.Number = 4
	fieldFlowDestLabels            protowire.Number = 5
	fieldFlowNumConnectionsStarted protowire.Number = 10

	fieldKeySourceName      protowire.Number = 1
	fieldKeySourceNamespace protowire.Number = 2
	fieldKeySourceType      protowire.Number = 3
	fieldKeyDestName        protowire.Number = 4
	fieldKeyDestNamespace   protowire.Number = 5
	fieldKeyDestType        protowire.Number = 6
	fieldKeyDestPort        protowire.Number = 7
	fieldKeyProto           protowire.Number = 12
	fieldKeyReporter        protowire.Number = 13
	fieldKeyAction          protowire.Number = 14
	fieldKeyPolicies        protowire.Number = 15

	fieldTraceEnforced protowire.Number = 1
	fieldTracePending  protowire.Number = 2

	fieldHitKind      protowire.Number = 1
	fieldHitNamespace protowire.Number = 2
	fieldHitName      protowire.Number = 3
	fieldHitAction    protowire.Number = 5
	fieldHitTrigger   protowire.Number = 8
)

// maxDepth bounds the nesting of policy hits' triggers, as protobuf's own
// decoder bounds the nesting of messages.
const maxDepth = 10000

var errTooDeep = errors.New("policy hit triggers nested too deep")

// result is one FlowResult as the receiver reads it: its flow, with only the
// fields that convertFlow reads, decoded into memory that the next message
// reuses.
type result struct {
	dec  *flowDecoder
	flow *pb.Flow
}

// DecodeWire decodes the message in b, replacing the previous one.
func (r *result) DecodeWire(b []byte) error {
	r.flow = nil
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if rd.Num != fieldResultFlow || !rd.Message() {
			continue
		}
		if r.flow == nil {
			r.flow = r.dec.newFlow()
		}
		if err := r.dec.flow(rd.Bytes, r.flow); err != nil {
			return err
		}
	}
	if err := rd.Err(); err != nil {
		return err
	}
	if r.flow != nil {
		// The record keeps the labels: they are shared lists, not the decoder's.
		r.flow.SourceLabels = r.dec.lists.List(r.flow.SourceLabels)
		r.flow.DestLabels = r.dec.lists.List(r.flow.DestLabels)
	}
	return nil
}

// flowDecoder decodes the fields of a Flow that convertFlow reads, and skips
// the rest on the wire, into memory of its own that each message reuses, with
// strings and label lists interned: a flow costs no allocation once its names
// were seen. It is used by the one goroutine that reads the stream.
type flowDecoder struct {
	strings *wirecodec.Interner
	lists   *wirecodec.Lists

	f                      pb.Flow
	key                    pb.FlowKey
	trace                  pb.PolicyTrace
	hits                   []*pb.PolicyHit
	usedHits               int
	srcLabels, dstLabels   []string
	enforcedHits, pendHits []*pb.PolicyHit
}

func newFlowDecoder() *flowDecoder {
	return &flowDecoder{
		strings: wirecodec.NewInterner(wirecodec.DefaultInternerSize),
		lists:   wirecodec.NewLists(wirecodec.DefaultInternerSize),
	}
}

// newFlow returns the decoder's flow, emptied.
func (d *flowDecoder) newFlow() *pb.Flow {
	d.f = pb.Flow{SourceLabels: d.srcLabels[:0], DestLabels: d.dstLabels[:0]}
	d.usedHits = 0
	return &d.f
}

func (d *flowDecoder) flow(b []byte, f *pb.Flow) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case rd.IsVarint():
			switch rd.Num {
			case fieldFlowStartTime:
				f.StartTime = int64(rd.Varint)
			case fieldFlowNumConnectionsStarted:
				f.NumConnectionsStarted = int64(rd.Varint)
			default: // counters that the schema does not read
			}
		case !rd.Message():
		case rd.Num == fieldFlowKey:
			if f.Key == nil {
				d.key = pb.FlowKey{}
				f.Key = &d.key
			}
			err = d.flowKey(rd.Bytes, f.Key)
		case rd.Num == fieldFlowSourceLabels:
			f.SourceLabels, err = d.appendString(f.SourceLabels, rd.Bytes)
			d.srcLabels = f.SourceLabels
		case rd.Num == fieldFlowDestLabels:
			f.DestLabels, err = d.appendString(f.DestLabels, rd.Bytes)
			d.dstLabels = f.DestLabels
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

func (d *flowDecoder) appendString(list []string, b []byte) ([]string, error) {
	s, err := d.strings.String(b)
	if err != nil {
		return list, err
	}
	return append(list, s), nil
}

func (d *flowDecoder) flowKey(b []byte, k *pb.FlowKey) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case rd.IsVarint():
			keyVarint(&rd, k)
		case !rd.Message():
		case rd.Num == fieldKeySourceName:
			k.SourceName, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldKeySourceNamespace:
			k.SourceNamespace, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldKeyDestName:
			k.DestName, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldKeyDestNamespace:
			k.DestNamespace, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldKeyProto:
			k.Proto, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldKeyPolicies:
			if k.Policies == nil {
				d.trace = pb.PolicyTrace{EnforcedPolicies: d.enforcedHits[:0], PendingPolicies: d.pendHits[:0]}
				k.Policies = &d.trace
			}
			err = d.policyTrace(rd.Bytes, k.Policies)
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}

// keyVarint sets the key's enums and port: proto3 enums are open, so a value
// the schema does not name is kept, for convertFlow to count as unknown.
func keyVarint(rd *wirecodec.Reader, k *pb.FlowKey) {
	switch rd.Num {
	case fieldKeySourceType:
		k.SourceType = pb.EndpointType(int32(rd.Varint))
	case fieldKeyDestType:
		k.DestType = pb.EndpointType(int32(rd.Varint))
	case fieldKeyDestPort:
		k.DestPort = int64(rd.Varint)
	case fieldKeyReporter:
		k.Reporter = pb.Reporter(int32(rd.Varint))
	case fieldKeyAction:
		k.Action = pb.Action(int32(rd.Varint))
	default: // the service's port: not read
	}
}

func (d *flowDecoder) policyTrace(b []byte, t *pb.PolicyTrace) error {
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		if !rd.Message() {
			continue
		}
		switch rd.Num {
		case fieldTraceEnforced:
			h := d.hit()
			if err := d.policyHit(rd.Bytes, h, 0); err != nil {
				return err
			}
			t.EnforcedPolicies = append(t.EnforcedPolicies, h)
			d.enforcedHits = t.EnforcedPolicies
		case fieldTracePending:
			h := d.hit()
			if err := d.policyHit(rd.Bytes, h, 0); err != nil {
				return err
			}
			t.PendingPolicies = append(t.PendingPolicies, h)
			d.pendHits = t.PendingPolicies
		default:
		}
	}
	return rd.Err()
}

// hit returns an emptied policy hit that the next message reuses.
func (d *flowDecoder) hit() *pb.PolicyHit {
	if d.usedHits == len(d.hits) {
		d.hits = append(d.hits, new(pb.PolicyHit))
	}
	h := d.hits[d.usedHits]
	d.usedHits++
	h.Kind, h.Namespace, h.Name, h.Action, h.Trigger = 0, "", "", 0, nil
	return h
}

// policyHit decodes a hit; its trigger, a hit too, merges when it repeats.
func (d *flowDecoder) policyHit(b []byte, h *pb.PolicyHit, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	rd := wirecodec.NewReader(b)
	for rd.Next() {
		var err error
		switch {
		case rd.IsVarint() && rd.Num == fieldHitKind:
			h.Kind = pb.PolicyKind(int32(rd.Varint))
		case rd.IsVarint() && rd.Num == fieldHitAction:
			h.Action = pb.Action(int32(rd.Varint))
		case !rd.Message():
		case rd.Num == fieldHitNamespace:
			h.Namespace, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldHitName:
			h.Name, err = d.strings.String(rd.Bytes)
		case rd.Num == fieldHitTrigger:
			if h.Trigger == nil {
				h.Trigger = d.hit()
			}
			err = d.policyHit(rd.Bytes, h.Trigger, depth+1)
		}
		if err != nil {
			return err
		}
	}
	return rd.Err()
}
