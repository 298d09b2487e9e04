package hubblereceiver

import (
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/pkg/hubble/parser/fieldmask"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

func newResponse() *observer.GetFlowsResponse { return &observer.GetFlowsResponse{} }

// BenchmarkDecode is the baseline: the generated code's decoding of the
// fixture messages alone, every field of every message.
func BenchmarkDecode(b *testing.B) {
	flowsourcetest.BenchDecode(b, flowsourcetest.Wire(b, loadFixtures(b)), newResponse)
}

// BenchmarkDecodeFast is the receiver's decoder on the same messages: the
// fields that the flow schema reads.
func BenchmarkDecodeFast(b *testing.B) {
	flowsourcetest.BenchDecodeWire(b, flowsourcetest.Wire(b, loadFixtures(b)), &response{dec: newFlowDecoder()})
}

// BenchmarkConvertFast is the receiver's path: its decoder, the conversion,
// the log record.
func BenchmarkConvertFast(b *testing.B) {
	resp := &response{dec: newFlowDecoder()}
	flowsourcetest.BenchConvertWire(b, flowsourcetest.Wire(b, loadFixtures(b)), resp, func(rec *flow.Record) bool {
		_, ok := convertFlow(resp.flow, rec)
		return ok
	})
}

// BenchmarkConvert is the same path with the generated code's decoding.
func BenchmarkConvert(b *testing.B) {
	flowsourcetest.BenchConvert(b, flowsourcetest.Wire(b, loadFixtures(b)), newResponse,
		func(resp *observer.GetFlowsResponse, rec *flow.Record) bool {
			_, ok := convertFlow(resp.GetFlow(), rec)
			return ok
		})
}

// BenchmarkAgentSends is what a real agent's flow costs the sender (a Cilium agent, the
// relay re-encoding it) with and without the receiver's field mask: the mask
// is applied as Cilium's observer applies it (fieldmask.Copy into one flow
// for the stream), then the flow is encoded.
func BenchmarkAgentSends(b *testing.B) {
	// A real agent's flows: the fixture's are synthetic, and hold only the
	// fields that the receiver reads.
	var flows []*flowpb.Flow
	for _, name := range realAgentRecordings {
		flows = append(flows, loadRealAgent(b, name)...)
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		i, size := 0, 0
		for b.Loop() {
			wire, err := proto.Marshal(flows[i%len(flows)])
			if err != nil {
				b.Fatal(err)
			}
			size += len(wire)
			i++
		}
		b.ReportMetric(float64(size)/float64(i), "bytes/flow")
	})
	b.Run("field_mask", func(b *testing.B) {
		mask, err := fieldmask.New(&fieldmaskpb.FieldMask{Paths: fieldMaskPaths})
		if err != nil {
			b.Fatal(err)
		}
		masked := &flowpb.Flow{}
		mask.Alloc(masked.ProtoReflect())
		b.ReportAllocs()
		i, size := 0, 0
		for b.Loop() {
			mask.Copy(masked.ProtoReflect(), flows[i%len(flows)].ProtoReflect())
			wire, err := proto.Marshal(masked)
			if err != nil {
				b.Fatal(err)
			}
			size += len(wire)
			i++
		}
		b.ReportMetric(float64(size)/float64(i), "bytes/flow")
	})
	// The relay decodes each node's flows and encodes them again for its
	// client: its cost follows the size of what the agents send.
	relays := func(name string, flows []*flowpb.Flow) {
		b.Run(name, func(b *testing.B) {
			wires := flowsourcetest.Wire(b, flows)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var f flowpb.Flow
				if err := proto.Unmarshal(wires[i%len(wires)], &f); err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(&f); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	relays("relay_whole", flows)
	mask, err := fieldmask.New(&fieldmaskpb.FieldMask{Paths: fieldMaskPaths})
	if err != nil {
		b.Fatal(err)
	}
	masked := make([]*flowpb.Flow, 0, len(flows))
	for _, f := range flows {
		m := &flowpb.Flow{}
		mask.Copy(m.ProtoReflect(), f.ProtoReflect())
		masked = append(masked, m)
	}
	relays("relay_field_mask", masked)
}
