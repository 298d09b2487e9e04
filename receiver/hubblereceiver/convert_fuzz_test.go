package hubblereceiver

import (
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// FuzzConvertFlow feeds arbitrary bytes through decoding and conversion: neither may
// panic, and what is kept must be a complete record of the schema.
func FuzzConvertFlow(f *testing.F) {
	for _, resp := range loadFixtures(f) {
		if fl := resp.GetFlow(); fl != nil {
			b, err := proto.Marshal(fl)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl := &flowpb.Flow{}
		if err := proto.Unmarshal(data, fl); err != nil {
			return
		}
		var rec flow.Record
		reason, ok := convertFlow(fl, &rec)
		if !ok {
			if reason == "" {
				t.Fatal("a dropped flow without a reason")
			}
			return
		}
		switch rec.Transport {
		case flow.TransportTCP, flow.TransportUDP, flow.TransportSCTP:
		default:
			t.Fatalf("transport %q", rec.Transport)
		}
		switch rec.Outcome {
		case flow.OutcomeAllowed, flow.OutcomeDenied, flow.OutcomeAudit:
		default:
			t.Fatalf("outcome %q", rec.Outcome)
		}
		lr := plog.NewLogRecord()
		rec.WriteTo(lr)
		var back flow.Record
		back.ReadFrom(lr)
		if back.Outcome != rec.Outcome || back.Destination.Port != rec.Destination.Port {
			t.Fatalf("round trip changed the record: %+v -> %+v", rec, back)
		}
	})
}
