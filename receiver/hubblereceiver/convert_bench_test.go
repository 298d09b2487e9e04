package hubblereceiver

import (
	"testing"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

func newResponse() *observer.GetFlowsResponse { return &observer.GetFlowsResponse{} }

// BenchmarkDecode is the baseline: protobuf decoding of the fixture messages alone.
func BenchmarkDecode(b *testing.B) {
	flowsourcetest.BenchDecode(b, flowsourcetest.Wire(b, loadFixtures(b)), newResponse)
}

// BenchmarkConvert is the receiver's path for the same messages.
func BenchmarkConvert(b *testing.B) {
	flowsourcetest.BenchConvert(b, flowsourcetest.Wire(b, loadFixtures(b)), newResponse,
		func(resp *observer.GetFlowsResponse, rec *flow.Record) bool {
			_, ok := convertFlow(resp.GetFlow(), rec)
			return ok
		})
}
