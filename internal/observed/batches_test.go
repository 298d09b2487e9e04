package observed

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

var other = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}

// flowsOf is the flows that a status write of obj would list for k.
func flowsOf(t *testing.T, s *Store, o types.NamespacedName, cur *v1alpha1.ObservedTraffic, k Key) (int64, *Update) {
	t.Helper()
	u := s.Status(o, cur, allowWorkloads, 10)
	for _, e := range u.Traffic.Observed {
		if KeyOf(&e) == k {
			return e.Flows, u
		}
	}
	return 0, u
}

// TestBatchSentAgainToANewLeader: a leader wrote one proposal's counts of a
// batch and died before it wrote the other's; the reader sends the batch to
// the next leader, whose store starts from the statuses: it counts the batch
// for the proposal that was not written, and skips it, counted, for the one
// that was.
func TestBatchSentAgainToANewLeader(t *testing.T) {
	now := time.Now() // the entries of status.countedBatches last an hour from it
	b1 := Batch{Sender: "reader-a", Seq: 1}
	b2 := Batch{Sender: "reader-a", Seq: 2}
	batch1 := []Seen{{Obj: obj, Key: db, Flows: 3, Time: t0}, {Obj: other, Key: stripe, Flows: 1, Time: t0}}
	batch2 := []Seen{{Obj: obj, Key: db, Flows: 2, Time: t0.Add(time.Second)}, {Obj: obj, Key: db, Flows: 1, Time: t0.Add(time.Second)},
		{Obj: other, Key: stripe, Flows: 4, Time: t0.Add(time.Second)}}

	dead := NewStore(10, nil, nil)
	if first, skipped := dead.AddBatch(b1, batch1, now); len(first) != 2 || skipped != 0 {
		t.Fatalf("batch 1: first %v, skipped %d", first, skipped)
	}
	dead.AddBatch(b2, batch2, now)
	// The dead leader wrote obj (both batches), not other.
	written, u := flowsOf(t, dead, obj, &v1alpha1.ObservedTraffic{}, db)
	if written != 6 {
		t.Fatalf("obj's write lists %d flows, want 6", written)
	}
	u.Written(now)
	objStatus := u.Traffic
	if got := objStatus.CountedBatches; len(got) != 1 || got[0].Sender != "reader-a" || got[0].Batch != 2 {
		t.Fatalf("obj's status counts batches %+v, want reader-a's 2", got)
	}

	statuses := map[types.NamespacedName][]v1alpha1.CountedBatch{obj: objStatus.CountedBatches}
	next := NewStore(10, nil, func(n types.NamespacedName) []v1alpha1.CountedBatch { return statuses[n] })
	_, skipped1 := next.AddBatch(b1, batch1, now)
	_, skipped2 := next.AddBatch(b2, batch2, now)
	if skipped1+skipped2 != 3 {
		t.Errorf("the next leader skipped %d records, want obj's 3", skipped1+skipped2)
	}
	if got, _ := flowsOf(t, next, obj, &objStatus, db); got != 6 {
		t.Errorf("obj lists %d flows after the batches came again, want the 6 written once", got)
	}
	if got, _ := flowsOf(t, next, other, &v1alpha1.ObservedTraffic{}, stripe); got != 5 {
		t.Errorf("other lists %d flows, want the 5 that the dead leader never wrote", got)
	}

	// A batch sent again to the same leader (an answer lost) is skipped
	// before any write too; a later one counts.
	if _, skipped := next.AddBatch(b2, batch2, now); skipped != 3 {
		t.Errorf("a batch taken twice by one leader: skipped %d records, want 3", skipped)
	}
	next.AddBatch(Batch{Sender: "reader-a", Seq: 3}, []Seen{{Obj: obj, Key: db, Flows: 10, Time: t0.Add(2 * time.Second)}}, now)
	if got, _ := flowsOf(t, next, obj, &objStatus, db); got != 16 {
		t.Errorf("obj lists %d flows after batch 3, want 16", got)
	}
	// Records of no batch (a leader's own relay or node agents) always count.
	next.AddBatch(Batch{}, []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	next.AddBatch(Batch{}, []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now)
	if got, _ := flowsOf(t, next, obj, &objStatus, db); got != 18 {
		t.Errorf("obj lists %d flows after two records of no batch, want 18", got)
	}
}

// TestCountedBatchesBounded: the status keeps each sender's last batch for
// an hour after it was counted, and the newest 64 senders.
func TestCountedBatchesBounded(t *testing.T) {
	s := NewStore(10, nil, nil)
	now := time.Now()
	s.AddBatch(Batch{Sender: "gone", Seq: 9}, []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now.Add(-2*time.Hour))
	for i := range maxCountedBatches + 5 {
		s.AddBatch(Batch{Sender: fmt.Sprintf("reader-%03d", i), Seq: 1}, []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}},
			now.Add(time.Duration(i)*time.Second))
	}
	got := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Traffic.CountedBatches
	if len(got) != maxCountedBatches {
		t.Fatalf("%d entries, want %d", len(got), maxCountedBatches)
	}
	for _, c := range got {
		if c.Sender == "gone" || c.Sender < "reader-005" {
			t.Errorf("kept %s: an entry past the hour or among the oldest", c.Sender)
		}
	}
	// A sender dropped from the status counts its next batch again: the
	// bound is on the senders of the last hour, not on what they send.
	if _, skipped := s.AddBatch(Batch{Sender: "gone", Seq: 10}, []Seen{{Obj: obj, Key: db, Flows: 1, Time: t0}}, now); skipped != 0 {
		t.Errorf("a later batch of a dropped sender skipped %d records", skipped)
	}
}
