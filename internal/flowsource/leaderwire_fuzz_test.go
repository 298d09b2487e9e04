package flowsource

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

// FuzzLeaderWire reads what a reader sends the leader, as the leader reads
// it: the batch that each resource names and the progress records. Whatever
// the bytes, nothing panics, and what is read is what the leader may use (a
// sender, a number from 1; a key and a time).
func FuzzLeaderWire(f *testing.F) {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	WriteProgress(rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty(), Mark{Key: "node-a", Time: time.Unix(1700000000, 5)})
	StampBatch(ld, "reader-1", 7)
	m := &plog.ProtoMarshaler{}
	seed, err := m.MarshalLogs(ld)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	rl.Resource().Attributes().PutStr(AttrBatchSeq, "seven") // the wrong type
	bad, _ := m.MarshalLogs(ld)
	f.Add(bad)
	f.Add([]byte{})
	u := &plog.ProtoUnmarshaler{}
	f.Fuzz(func(t *testing.T, b []byte) {
		ld, err := u.UnmarshalLogs(b)
		if err != nil {
			return
		}
		for _, rl := range ld.ResourceLogs().All() {
			if sender, seq, ok := BatchOf(rl.Resource()); ok && (sender == "" || seq < 1) {
				t.Fatalf("a batch read as %q %d", sender, seq)
			}
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if mk, ok := ReadProgress(lr); ok && (mk.Key == "" || mk.Time.IsZero()) {
						t.Fatalf("a progress record read as %+v", mk)
					}
				}
			}
		}
		_ = BatchSeqOf(ld)
	})
}
