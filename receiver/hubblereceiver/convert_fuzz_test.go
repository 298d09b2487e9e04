package hubblereceiver

import (
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// FuzzConvertFlow feeds arbitrary bytes through decoding and conversion: neither may
// panic, a drop must say why, and what is kept must be a complete record.
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
		if reason, ok := convertFlow(fl, &rec); !ok {
			if reason == "" {
				t.Fatal("a dropped flow without a reason")
			}
			return
		}
		flowsourcetest.CheckRecord(t, rec)
	})
}
