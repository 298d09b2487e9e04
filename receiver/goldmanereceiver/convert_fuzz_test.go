package goldmanereceiver

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
)

// FuzzConvertFlow feeds arbitrary bytes through decoding and conversion: neither may
// panic, a drop must say why, and what is kept must be a complete record whose pod
// ends are named.
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
		if reason, ok := convertFlow(fl, &rec); !ok {
			if reason == "" {
				t.Fatal("a dropped flow without a reason")
			}
			return
		}
		flowsourcetest.CheckRecord(t, rec)
		for _, e := range []flow.Endpoint{rec.Source, rec.Destination} {
			if e.External == "" && (e.Pod == "" || e.Namespace == "") {
				t.Fatalf("a pod end without a name: %+v", e)
			}
		}
	})
}
