package flowsourcetest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// FuzzConversion fuzzes a receiver's conversion from the wire: arbitrary bytes are
// decoded as M and converted. Neither may panic, a drop must say why, and a kept
// record must pass CheckRecord and check, when check is not nil. seeds start the
// corpus.
func FuzzConversion[M proto.Message](f *testing.F, seeds []M, newMsg func() M,
	convert func(M, *flow.Record) (flowsource.DropReason, bool), check func(*testing.T, flow.Record),
) {
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMsg()
		if err := proto.Unmarshal(data, m); err != nil {
			return
		}
		var rec flow.Record
		if reason, ok := convert(m, &rec); !ok {
			if reason == "" {
				t.Fatal("a dropped flow without a reason")
			}
			return
		}
		CheckRecord(t, rec)
		if check != nil {
			check(t, rec)
		}
	})
}
