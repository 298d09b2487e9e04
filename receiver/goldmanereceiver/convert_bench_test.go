package goldmanereceiver

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

func newResult() *pb.FlowResult { return &pb.FlowResult{} }

// BenchmarkDecode is the baseline: protobuf decoding of the fixture messages alone.
func BenchmarkDecode(b *testing.B) {
	flowsourcetest.BenchDecode(b, flowsourcetest.Wire(b, loadFixtures(b)), newResult)
}

// BenchmarkConvert is the receiver's path for the same messages.
func BenchmarkConvert(b *testing.B) {
	flowsourcetest.BenchConvert(b, flowsourcetest.Wire(b, loadFixtures(b)), newResult,
		func(res *pb.FlowResult, rec *flow.Record) bool {
			_, ok := convertFlow(res.GetFlow(), rec)
			return ok
		})
}
