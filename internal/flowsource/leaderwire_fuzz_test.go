package flowsource

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/logsfuzz"
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
	bad := plog.NewLogs()
	ld.CopyTo(bad)
	bad.ResourceLogs().At(0).Resource().Attributes().PutStr(AttrBatchSeq, "seven") // the wrong type
	taken := plog.NewLogs()
	ld.CopyTo(taken)
	MarkTaken(taken)
	notBool := plog.NewLogs()
	taken.CopyTo(notBool)
	notBool.ResourceLogs().At(0).Resource().Attributes().PutStr(AttrBatchTaken, "yes") // the wrong type
	logsfuzz.Seed(f, ld, bad, taken, notBool)
	f.Fuzz(func(t *testing.T, b []byte) {
		logsfuzz.Each(b, func(_ plog.ResourceLogs, lr plog.LogRecord) {
			if mk, ok := ReadProgress(lr); ok && (mk.Key == "" || mk.Time.IsZero()) {
				t.Fatalf("a progress record read as %+v", mk)
			}
		})
		ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
		if err != nil {
			return
		}
		for _, rl := range ld.ResourceLogs().All() {
			if sender, seq, ok := BatchOf(rl.Resource()); ok && (sender == "" || seq < 1) {
				t.Fatalf("a batch read as %q %d", sender, seq)
			}
		}
		_ = BatchSeqOf(ld)
		_ = WasTaken(ld)
	})
}
