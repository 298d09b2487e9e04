package observed

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Batch names one batch of a sender (a replica that sends the leader what it
// learned): its process's name and the batch's sequence number, from 1. A
// sender numbers its batches in the order it sends them and sends one at a
// time, so an object whose counts include batch n include every earlier
// batch of that sender too. The zero Batch is a record of no sender's batch:
// always counted.
type Batch struct {
	Sender string
	Seq    int64
}

// Seen is one record of a batch: flows of the edge Key of Obj, the newest
// seen at Time.
type Seen struct {
	Obj   types.NamespacedName
	Key   Key
	Flows int64
	Time  time.Time
}

// Counted bounds of status.countedBatches: an entry is kept for
// countedBatchesTTL after the batch it names was counted (a sender sends a
// batch again only within its resend window, minutes), and at most
// v1alpha1's 64 entries, the newest.
const (
	countedBatchesTTL = time.Hour
	maxCountedBatches = 64
)

// counted is the last batch of a sender that an object's counts include, and
// when it was counted.
type counted struct {
	seq int64
	at  time.Time
}

// AddBatch adds the records of one sender's batch, each object's records all
// or none: an object whose counts include the batch already (its sender sent
// it again, to a new leader or after a lost answer) skips them, and skipped
// counts them. It returns the objects that had nothing unwritten before: the
// moment to ask for their write.
func (s *Store) AddBatch(b Batch, seen []Seen, now time.Time) (first []types.NamespacedName, skipped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var took map[types.NamespacedName]bool
	if b.Sender != "" {
		s.noteSenderLocked(b, now)
	}
	for i := range seen {
		r := &seen[i]
		tb := s.table(r.Obj)
		if b.Sender != "" {
			if c, ok := tb.counted[b.Sender]; ok && c.seq >= b.Seq {
				skipped++
				continue
			}
			if took == nil {
				took = map[types.NamespacedName]bool{}
			}
			took[r.Obj] = true
		}
		if f, _ := s.addLocked(tb, r.Obj, &r.Key, r.Flows, r.Time); f {
			first = append(first, r.Obj)
		}
	}
	for obj := range took {
		tb := s.objects[obj]
		if tb.counted == nil {
			tb.counted = map[string]counted{}
		}
		tb.counted[b.Sender] = counted{seq: b.Seq, at: now}
		s.notePendingLocked(tb, b)
	}
	return first, skipped
}

// Counts reports whether obj's counts include batch b: its last status, or
// this store since, counted it. A writer that counts more than the store's
// edges from a batch (the violation processor's violation records) asks
// before it takes the batch, and skips what the status counts already. The
// zero Batch is never counted.
func (s *Store) Counts(obj types.NamespacedName, b Batch) bool {
	if b.Sender == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.table(obj).counted[b.Sender]
	return ok && c.seq >= b.Seq
}

// HoldsBatches reports whether obj holds records of a sender's batch that no
// written status counts yet: its next write must carry its counted batches.
func (s *Store) HoldsBatches(obj types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	return tb != nil && len(tb.unwrittenBatches) > 0
}

// restoreCounted reads the batches that obj's last status counts, once per
// table: from the cache as the table is made, so that a new leader skips the
// batches sent again that its predecessor wrote; s.mu is held.
func (s *Store) restoreCounted(tb *table, obj types.NamespacedName) {
	if s.countedOf == nil {
		return
	}
	tb.mergeCounted(s.countedOf(obj))
}

// mergeCounted keeps, for each sender, the later of what the table holds and
// the batches listed.
func (tb *table) mergeCounted(list []v1alpha1.CountedBatch) {
	for _, c := range list {
		if c.Sender == "" {
			continue
		}
		if tb.counted == nil {
			tb.counted = map[string]counted{}
		}
		if have, ok := tb.counted[c.Sender]; !ok || have.seq < c.Batch {
			tb.counted[c.Sender] = counted{seq: c.Batch, at: c.Time.Time}
		}
	}
}

// countedBatches is status.countedBatches of the table: the newest entries
// within countedBatchesTTL of now, by sender; older ones are dropped from the
// table too.
func (tb *table) countedBatches(now time.Time) []v1alpha1.CountedBatch {
	var list []v1alpha1.CountedBatch
	for sender, c := range tb.counted {
		if now.Sub(c.at) > countedBatchesTTL {
			delete(tb.counted, sender)
			continue
		}
		list = append(list, v1alpha1.CountedBatch{Sender: sender, Batch: c.seq, Time: seconds(c.at)})
	}
	if len(list) > maxCountedBatches {
		slices.SortFunc(list, func(a, b v1alpha1.CountedBatch) int { return b.Time.Compare(a.Time.Time) })
		for _, c := range list[maxCountedBatches:] {
			delete(tb.counted, c.Sender)
		}
		list = list[:maxCountedBatches]
	}
	slices.SortFunc(list, func(a, b v1alpha1.CountedBatch) int { return strings.Compare(a.Sender, b.Sender) })
	return list
}
