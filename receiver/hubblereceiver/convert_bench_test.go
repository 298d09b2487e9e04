package hubblereceiver

import (
	"testing"

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
