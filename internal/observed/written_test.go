package observed

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// TestWrittenThroughFollowsTheWrites: a sender's mark stops before the first
// batch that an object holds unwritten, moves on as each status write takes
// its batches, and does not count as written a batch that came after the
// writer took the object's learned edges (Hold), though the status counts it.
func TestWrittenThroughFollowsTheWrites(t *testing.T) {
	s := NewStore(10, nil, nil)
	other := types.NamespacedName{Namespace: "shop", Name: "deployment-api-ingress"}
	now := time.Now()
	a := func(seq int64) Batch { return Batch{Sender: "reader-a", Seq: seq} }
	want := func(step string, w map[string]int64) {
		t.Helper()
		if got := s.WrittenThrough(now); !maps.Equal(got, w) {
			t.Fatalf("%s: written through %v, want %v", step, got, w)
		}
	}
	if got := s.WrittenThrough(now); got != nil {
		t.Fatalf("no batch yet: %v", got)
	}
	s.AddBatch(a(1), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	s.AddBatch(a(2), []Seen{{Obj: other, Key: db, Flows: 1, Time: t0}}, now)
	s.AddBatch(Batch{Sender: "reader-b", Seq: 7}, []Seen{{Obj: other, Key: stripe, Flows: 1, Time: t0}}, now)
	want("nothing written", map[string]int64{"reader-a": 0, "reader-b": 6})

	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	want("a status made, not written", map[string]int64{"reader-a": 0, "reader-b": 6})
	u.Written(now)
	want("obj written", map[string]int64{"reader-a": 1, "reader-b": 6})

	// The writer takes other's learned edges; batch 3 comes with a new
	// edge of other before its status is made, which counts it.
	s.Hold(other)
	s.AddBatch(a(3), []Seen{{Obj: other, Key: stripe, Flows: 1, Time: t0}}, now)
	u = s.Status(other, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	if n := len(u.Traffic.CountedBatches); n != 2 {
		t.Fatalf("counted batches %+v", u.Traffic.CountedBatches)
	}
	u.Written(now)
	want("other written, held before batch 3", map[string]int64{"reader-a": 2, "reader-b": 7})
	s.Status(other, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	want("other written again", map[string]int64{"reader-a": 3, "reader-b": 7})

	// A new object: the writer takes its learned edges before its first
	// batch comes, so its first status does not write that batch.
	fresh := types.NamespacedName{Namespace: "shop", Name: "deployment-new-egress"}
	s.Hold(fresh)
	s.AddBatch(a(4), []Seen{{Obj: fresh, Key: db, Flows: 1, Time: t0}}, now)
	s.Status(fresh, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	want("a new object held before its first batch", map[string]int64{"reader-a": 3, "reader-b": 7})
	s.Status(fresh, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	want("the new object written again", map[string]int64{"reader-a": 4, "reader-b": 7})

	// A batch whose records were all counted already (sent again) holds
	// nothing back.
	s.AddBatch(a(3), []Seen{{Obj: other, Key: stripe, Flows: 1, Time: t0}}, now)
	want("a batch sent again", map[string]int64{"reader-a": 4, "reader-b": 7})

	// A sender not heard from for countedBatchesTTL is dropped.
	now = now.Add(countedBatchesTTL + time.Second)
	s.AddBatch(a(5), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	want("reader-b gone quiet", map[string]int64{"reader-a": 4})
}

// TestNotWrittenReleasesWhatAReconcileTook: a reconcile that leaves its
// object as it is and asks for no other write releases the batches it took
// (up to its hold), not one that came after the hold.
func TestNotWrittenReleasesWhatAReconcileTook(t *testing.T) {
	s := NewStore(10, nil, nil)
	now := time.Now()
	a := func(seq int64) Batch { return Batch{Sender: "reader-a", Seq: seq} }
	s.AddBatch(a(1), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	s.Hold(obj)
	s.AddBatch(a(2), []Seen{{Obj: obj, Key: stripe, Flows: 1, Time: t0}}, now)
	if got := s.WrittenThrough(now)["reader-a"]; got != 0 {
		t.Fatalf("before: written through %d, want 0", got)
	}
	s.NotWritten(obj)
	if got := s.WrittenThrough(now)["reader-a"]; got != 1 {
		t.Fatalf("after the reconcile that took batch 1: written through %d, want 1", got)
	}
	// A status the API server refused: what it counted is released too.
	s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	s.NotWritten(obj)
	if got := s.WrittenThrough(now)["reader-a"]; got != 2 {
		t.Fatalf("after a refused status: written through %d, want 2", got)
	}
}
