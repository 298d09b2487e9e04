package goldmanereceiver

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

func newResult() *pb.FlowResult { return &pb.FlowResult{} }

// BenchmarkDecode is the baseline: the generated code's decoding of the
// fixture messages alone, every field of every message.
func BenchmarkDecode(b *testing.B) {
	flowsourcetest.BenchDecode(b, flowsourcetest.Wire(b, loadFixtures(b)), newResult)
}

// BenchmarkDecodeFast is the receiver's decoder on the same messages.
func BenchmarkDecodeFast(b *testing.B) {
	flowsourcetest.BenchDecodeWire(b, flowsourcetest.Wire(b, loadFixtures(b)), &result{dec: newFlowDecoder()})
}

// BenchmarkConvertFast is the receiver's path: its decoder, the conversion,
// the log record.
func BenchmarkConvertFast(b *testing.B) {
	res := &result{dec: newFlowDecoder()}
	flowsourcetest.BenchConvertWire(b, flowsourcetest.Wire(b, loadFixtures(b)), res, func(rec *flow.Record) bool {
		_, ok := convertFlow(res.flow, rec)
		return ok
	})
}

// BenchmarkConvert is the same path with the generated code's decoding.
func BenchmarkConvert(b *testing.B) {
	flowsourcetest.BenchConvert(b, flowsourcetest.Wire(b, loadFixtures(b)), newResult,
		func(res *pb.FlowResult, rec *flow.Record) bool {
			_, ok := convertFlow(res.GetFlow(), rec)
			return ok
		})
}
