package goldmanereceiver

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
)

// wireFixtures returns the fixture messages as the bytes that arrive on the wire.
func wireFixtures(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, res := range loadFixtures(tb) {
		b, err := proto.Marshal(res)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// BenchmarkDecode is the baseline: protobuf decoding of the fixture messages alone.
func BenchmarkDecode(b *testing.B) {
	msgs := wireFixtures(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res := &pb.FlowResult{}
		if err := proto.Unmarshal(msgs[i%len(msgs)], res); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkConvert is the receiver's path for the same messages: decode, convert
// to the flow schema, write the log record.
func BenchmarkConvert(b *testing.B) {
	msgs := wireFixtures(b)
	lr := plog.NewLogRecord()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res := &pb.FlowResult{}
		if err := proto.Unmarshal(msgs[i%len(msgs)], res); err != nil {
			b.Fatal(err)
		}
		var rec flow.Record
		if _, ok := convertFlow(res.GetFlow(), &rec); ok {
			rec.WriteTo(lr)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}
