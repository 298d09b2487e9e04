package goldmanereceiver

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
)

// FuzzConvertFlow feeds arbitrary bytes through decoding and conversion: neither may
// panic, and what is kept must be a complete record of the schema.
func FuzzConvertFlow(f *testing.F) {
	for _, res := range loadFixtures(f) {
		b, err := proto.Marshal(res.GetFlow())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl := &pb.Flow{}
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
		if rec.Outcome != flow.OutcomeAllowed && rec.Outcome != flow.OutcomeDenied {
			t.Fatalf("outcome %q", rec.Outcome)
		}
		if rec.Count < 1 || rec.Destination.Port > 65535 {
			t.Fatalf("count %d port %d", rec.Count, rec.Destination.Port)
		}
		if rec.Source.External == "" && (rec.Source.Pod == "" || rec.Source.Namespace == "") {
			t.Fatalf("a pod end without a name: %+v", rec.Source)
		}
		lr := plog.NewLogRecord()
		rec.WriteTo(lr)
		var back flow.Record
		back.ReadFrom(lr)
		if back.Outcome != rec.Outcome || back.Count != rec.Count {
			t.Fatalf("round trip changed the record: %+v -> %+v", rec, back)
		}
	})
}
