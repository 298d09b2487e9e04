package flowsourcetest

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// Wire returns msgs as the bytes that arrive on the wire.
func Wire[M proto.Message](tb testing.TB, msgs []M) [][]byte {
	tb.Helper()
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// BenchDecode is the baseline of a receiver benchmark: protobuf decoding of the
// wire messages alone. It reports msgs/s.
func BenchDecode[M proto.Message](b *testing.B, wire [][]byte, newMsg func() M) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := proto.Unmarshal(wire[i%len(wire)], newMsg()); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchConvert is a receiver's path for the same messages: decode, convert to the
// flow schema, write the log record. It reports msgs/s, to set against BenchDecode
// in the same run.
func BenchConvert[M proto.Message](b *testing.B, wire [][]byte, newMsg func() M, convert func(M, *flow.Record) bool) {
	lr := plog.NewLogRecord()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := newMsg()
		if err := proto.Unmarshal(wire[i%len(wire)], m); err != nil {
			b.Fatal(err)
		}
		var rec flow.Record
		if convert(m, &rec) {
			rec.WriteTo(lr)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchDecodeWire is BenchDecode with a receiver's own decoder.
func BenchDecodeWire(b *testing.B, wire [][]byte, dec wirecodec.Decoder) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := dec.DecodeWire(wire[i%len(wire)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchConvertWire is BenchConvert with a receiver's own decoder: convert
// reads the message that dec decoded.
func BenchConvertWire(b *testing.B, wire [][]byte, dec wirecodec.Decoder, convert func(*flow.Record) bool) {
	lr := plog.NewLogRecord()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := dec.DecodeWire(wire[i%len(wire)]); err != nil {
			b.Fatal(err)
		}
		var rec flow.Record
		if convert(&rec) {
			rec.WriteTo(lr)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "msgs/s")
}

// CheckRecord fails t when a record that a receiver kept breaks the schema: it has
// an outcome, a transport a policy can name, a count, a named pod for every end
// that is not external, and it survives a round trip through a log record.
func CheckRecord(t *testing.T, rec flow.Record) {
	t.Helper()
	switch rec.Transport {
	case flow.TransportTCP, flow.TransportUDP, flow.TransportSCTP:
	default:
		t.Fatalf("transport %q", rec.Transport)
	}
	switch rec.Outcome {
	case flow.OutcomeAllowed, flow.OutcomeDenied, flow.OutcomeDryRunDenied, flow.OutcomeAudit:
	default:
		t.Fatalf("outcome %q", rec.Outcome)
	}
	if rec.Count < 1 || rec.Destination.Port > 65535 {
		t.Fatalf("count %d, destination port %d", rec.Count, rec.Destination.Port)
	}
	lr := plog.NewLogRecord()
	rec.WriteTo(lr)
	var back flow.Record
	back.ReadFrom(lr)
	if back.Outcome != rec.Outcome || back.Count != rec.Count || back.Destination.Port != rec.Destination.Port ||
		back.Source.Pod != rec.Source.Pod || back.Policy != rec.Policy {
		t.Fatalf("round trip changed the record: %+v -> %+v", rec, back)
	}
}
