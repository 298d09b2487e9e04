package observed

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A reader keeps each batch it sent the leader until the leader says that it
// wrote every record of it: a leader that dies holds what it took in memory,
// and the next leader must be sent it again. written.go is the leader's side:
// for each sender, the last batch up to which every record is in a status
// that the API server took (WrittenThrough).

// pendingBatches are the batches of one sender whose records an object
// holds unwritten: from the first of them to the last. A batch between the
// two may have had no record of the object; it is held all the same.
type pendingBatches struct {
	from, last int64
}

// senderSeen is the last batch that a sender's records came in, and when;
// gap is the time between its last two batches, and silent says that it went
// silent (HeldBySilent) and has sent nothing since.
type senderSeen struct {
	last   int64
	at     time.Time
	gap    time.Duration
	silent bool
}

// SenderSilence is the least time without a batch after which a sender is
// taken for dead: a reader sends a batch every aggregation interval (1 s by
// default) while its nodes' flows come. One that sends less often is given
// three of its last gaps between batches.
const SenderSilence = 10 * time.Second

// notePendingLocked notes that obj's table tb took records of batch b;
// s.mu is held.
func (s *Store) notePendingLocked(tb *table, b Batch) {
	if tb.unwrittenBatches == nil {
		tb.unwrittenBatches = map[string]pendingBatches{}
	}
	p, ok := tb.unwrittenBatches[b.Sender]
	if !ok || b.Seq < p.from {
		p.from = b.Seq
	}
	p.last = max(p.last, b.Seq)
	tb.unwrittenBatches[b.Sender] = p
}

// noteSenderLocked notes that batch b came at now, counted or skipped;
// s.mu is held.
func (s *Store) noteSenderLocked(b Batch, now time.Time) {
	if s.senders == nil {
		s.senders = map[string]senderSeen{}
	}
	seen := s.senders[b.Sender]
	gap := seen.gap
	if !seen.at.IsZero() {
		gap = now.Sub(seen.at)
	}
	s.senders[b.Sender] = senderSeen{last: max(seen.last, b.Seq), at: now, gap: gap}
}

// HeldBySilent returns the objects that hold unwritten records of a sender
// that went silent at now, once per silence, sorted. Until the sender sends
// again their writes do not wait for observed_interval (Wait). A reader that
// dies leaves the records it sent the leader in the leader's memory alone: it
// kept them for a next leader, and its nodes' next readers count from where
// the leader took them. Written at once, they no longer hang on the leader's
// life for an observed interval.
func (s *Store) HeldBySilent(now time.Time) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone map[string]bool
	for sender, seen := range s.senders {
		if seen.silent || now.Sub(seen.at) <= max(SenderSilence, 3*seen.gap) {
			continue
		}
		seen.silent = true
		s.senders[sender] = seen
		if gone == nil {
			gone = map[string]bool{}
		}
		gone[sender] = true
	}
	if gone == nil {
		return nil
	}
	var held []types.NamespacedName
	for obj, tb := range s.objects {
		for sender := range tb.unwrittenBatches {
			if gone[sender] {
				held = append(held, obj)
				break
			}
		}
	}
	slices.SortFunc(held, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return held
}

// holdsSilentLocked reports whether tb holds unwritten records of a sender
// that went silent; s.mu is held.
func (s *Store) holdsSilentLocked(tb *table) bool {
	for sender := range tb.unwrittenBatches {
		if s.senders[sender].silent {
			return true
		}
	}
	return false
}

// Hold marks where obj's next status write may count up to: the batches
// its counts include now. The writer calls it before it takes obj's learned
// edges for a write: a batch that comes after that has edges the write of
// the spec did not take, so that write's status must not say it wrote them,
// though its observed edges count the batch. An object with no table yet
// gets one, so that a first batch that comes before its first status is
// held too.
func (s *Store) Hold(obj types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.table(obj)
	tb.held = make(map[string]int64, len(tb.counted))
	for sender, c := range tb.counted {
		tb.held[sender] = c.seq
	}
}

// NotWritten says that the writer's last reconcile of obj left it as it is
// and asked for no other (a policy governs its workload, it has no proposal
// yet, the writer does not manage it, or the API server refused it): the
// batches that reconcile took (up to the hold, or the status it made) no
// longer hold the senders' marks back, else every reader would keep every
// batch for the longest resend window. Their flows stay, for a write that
// comes later; a leader that dies before it loses them.
func (s *Store) NotWritten(obj types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	if tb == nil {
		return
	}
	bound := tb.held
	if bound == nil {
		bound = tb.lastCovered
	}
	tb.writtenLocked(bound)
	tb.held, tb.lastCovered = nil, nil
}

// coveredLocked is, for each sender whose batches tb holds unwritten, the
// last batch that a status made now writes, and ends the hold; s.mu is held.
func (tb *table) coveredLocked() map[string]int64 {
	if len(tb.unwrittenBatches) == 0 {
		tb.held, tb.lastCovered = nil, nil
		return nil
	}
	covered := make(map[string]int64, len(tb.unwrittenBatches))
	for sender := range tb.unwrittenBatches {
		c := tb.counted[sender].seq
		if tb.held != nil {
			c = min(c, tb.held[sender])
		}
		covered[sender] = c
	}
	tb.held, tb.lastCovered = nil, covered
	return covered
}

// writtenLocked notes that a status counting the batches covered is
// written: they are no longer pending; s.mu is held.
func (tb *table) writtenLocked(covered map[string]int64) {
	for sender, c := range covered {
		p, ok := tb.unwrittenBatches[sender]
		switch {
		case !ok:
		case p.last <= c:
			delete(tb.unwrittenBatches, sender)
		case p.from <= c:
			p.from = c + 1
			tb.unwrittenBatches[sender] = p
		}
	}
}

// WrittenThrough is, for each sender heard from within countedBatchesTTL of
// now, the last batch up to which every record it sent this writer is in a
// written status: the batches that the sender no longer needs to keep for a
// next leader. Senders not heard from since are dropped.
func (s *Store) WrittenThrough(now time.Time) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.senders) == 0 {
		return nil
	}
	marks := make(map[string]int64, len(s.senders))
	for sender, seen := range s.senders {
		if now.Sub(seen.at) > countedBatchesTTL {
			delete(s.senders, sender)
			continue
		}
		marks[sender] = seen.last
	}
	for _, tb := range s.objects {
		for sender, p := range tb.unwrittenBatches {
			if m, ok := marks[sender]; ok && p.from <= m {
				marks[sender] = p.from - 1
			}
		}
	}
	return marks
}
