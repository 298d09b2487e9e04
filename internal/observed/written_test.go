package observed

import (
	"maps"
	"slices"
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

// TestASilentSendersRecordsAreWrittenAtOnce: once a sender sends nothing for
// SenderSilence (or three of its gaps between batches), the objects that hold
// its unwritten records are named once, and their writes no longer wait for
// observed_interval, until it sends again; an object that holds only a live
// sender's records waits as before.
func TestASilentSendersRecordsAreWrittenAtOnce(t *testing.T) {
	s := NewStore(10, nil, nil)
	other := types.NamespacedName{Namespace: "shop", Name: "deployment-api-ingress"}
	const interval = time.Hour
	now := time.Now()
	a := func(seq int64) Batch { return Batch{Sender: "reader-a", Seq: seq} }
	b := func(seq int64) Batch { return Batch{Sender: "reader-b", Seq: seq} }
	s.AddBatch(a(1), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	s.AddBatch(b(1), []Seen{{Obj: other, Key: db, Flows: 1, Time: t0}}, now)
	s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	s.Status(other, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	// New records of each since the writes: they wait for the interval.
	now = now.Add(time.Second)
	s.AddBatch(a(2), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	s.AddBatch(b(2), []Seen{{Obj: other, Key: db, Flows: 1, Time: t0}}, now)
	if held := s.HeldBySilent(now.Add(SenderSilence / 2)); held != nil {
		t.Fatalf("silent before SenderSilence: %v", held)
	}

	// reader-a goes on; reader-b sends nothing more.
	s.AddBatch(a(3), []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now.Add(SenderSilence-time.Second))
	now = now.Add(SenderSilence + time.Second)
	if held := s.HeldBySilent(now); len(held) != 1 || held[0] != other {
		t.Fatalf("held by the silent sender: %v, want [%v]", held, other)
	}
	if held := s.HeldBySilent(now.Add(time.Second)); held != nil {
		t.Fatalf("named again in the same silence: %v", held)
	}
	if w := s.Wait(other, interval, now); w != 0 {
		t.Fatalf("the silent sender's object waits %s for its write", w)
	}
	if w := s.Wait(obj, interval, now); w <= 0 {
		t.Fatal("the live sender's object does not wait for the interval")
	}

	// Once written, it waits again: nothing of the silent sender is left.
	s.Status(other, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(now)
	if w := s.Wait(other, interval, now); w <= 0 {
		t.Fatal("written, it does not wait for the interval")
	}

	// A sender whose batches come further apart is given three of its gaps
	// (reader-a, silent by now, is named at the first look).
	now = now.Add(time.Minute)
	s.AddBatch(b(3), []Seen{{Obj: other, Key: db, Flows: 1, Time: t0}}, now)
	s.AddBatch(b(4), []Seen{{Obj: other, Key: db, Flows: 1, Time: t0}}, now.Add(20*time.Second))
	now = now.Add(20 * time.Second)
	if held := s.HeldBySilent(now.Add(30 * time.Second)); slices.Contains(held, other) {
		t.Fatalf("silent within three of its 20 s gaps: %v", held)
	}
	if held := s.HeldBySilent(now.Add(61 * time.Second)); !slices.Equal(held, []types.NamespacedName{other}) {
		t.Fatalf("after three of its gaps: %v, want [%v]", held, other)
	}
}
