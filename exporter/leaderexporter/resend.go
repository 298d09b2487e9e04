package leaderexporter

import (
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// resendable numbers a reader's batches of learned records and keeps those
// the leader took until the leader says that it wrote them (its membership
// Lease's written-through mark), or for the resend window at most: a leader
// that dies holds what it took in memory until it writes it, at most once
// per observed_interval and later while its writes queue, so the next leader
// is sent it again, and skips, proposal by proposal, what the previous one
// wrote (the batch numbers that the status counts). Used under the sender's
// sendMu.
type resendable struct {
	window time.Duration
	// records is how many records the kept batches hold, for the gauge.
	records atomic.Int64
	// sender is this process's name in the batches: a new one with each
	// start, so that numbers start again at 1 without a clash.
	sender string
	last   int64
	// leader is the leader process that took the last batch.
	leader string
	// resending is the leader process that the kept batches are being sent
	// to again, and resentUpTo the last of them that it took: a resend cut
	// short (a timeout under load) goes on after it, not from the first.
	// Starting over each time would send a slow leader its predecessor's
	// last resend_window of batches at every try, which is what makes it
	// slow.
	resending  string
	resentUpTo int64
	kept       []keptBatch
}

// keptBatch is a batch that a leader took, kept until the window after it
// was last sent.
type keptBatch struct {
	seq  int64
	ld   plog.Logs
	sent time.Time
}

func newResendable(window time.Duration) *resendable {
	return &resendable{window: window, sender: string(uuid.NewUUID())}
}

// number is ld's batch number: the one it was given at an earlier try, else
// the next, which it is then stamped with.
func (r *resendable) number(ld plog.Logs) int64 {
	if seq := flowsource.BatchSeqOf(ld); seq > 0 {
		return seq
	}
	r.last++
	flowsource.StampBatch(ld, r.sender, r.last)
	return r.last
}

// toSendAgain is what a leader must be sent before batch seq (0 for a batch
// that is not numbered): every batch kept, in order, when leader is not the
// process that took the last batch, but those it took already in a resend
// cut short; nothing otherwise. Batches past the window are dropped first.
// The caller reports each batch that the leader takes with resent.
func (r *resendable) toSendAgain(leader string, seq int64, now time.Time) []keptBatch {
	r.expire(now)
	if leader == r.leader || len(r.kept) == 0 {
		return nil
	}
	var again []keptBatch
	for _, k := range r.kept {
		if seq > 0 && k.seq >= seq {
			break // a try of this batch that an earlier leader took
		}
		if leader == r.resending && k.seq <= r.resentUpTo {
			continue
		}
		again = append(again, k)
	}
	return again
}

// resent notes that leader took kept batch seq again at now.
func (r *resendable) resent(leader string, seq int64, now time.Time) {
	if leader != r.resending {
		r.resending, r.resentUpTo = leader, 0
	}
	r.resentUpTo = max(r.resentUpTo, seq)
	for i := range r.kept {
		if r.kept[i].seq == seq {
			r.kept[i].sent = now
		}
	}
}

// took notes that leader took batch seq (0: not numbered, not kept).
func (r *resendable) took(leader string, seq int64, ld plog.Logs, now time.Time) {
	r.leader = leader
	if seq == 0 || r.window <= 0 {
		return
	}
	if n := len(r.kept); n > 0 && r.kept[n-1].seq >= seq {
		r.kept[n-1].sent = now // taken again after an answer that was lost
		return
	}
	r.kept = append(r.kept, keptBatch{seq: seq, ld: ld, sent: now})
	r.records.Add(int64(ld.LogRecordCount()))
}

// written drops the kept batches up to seq, which leader says it wrote:
// when it is the process that took the last batch, it took every kept one,
// since a new leader is sent them all again before the next.
func (r *resendable) written(leader string, seq int64) {
	if leader != r.leader {
		return
	}
	n := 0
	for n < len(r.kept) && r.kept[n].seq <= seq {
		n++
	}
	r.drop(n)
}

// drop drops the first n kept batches.
func (r *resendable) drop(n int) {
	if n == 0 {
		return
	}
	for _, k := range r.kept[:n] {
		r.records.Add(-int64(k.ld.LogRecordCount()))
	}
	r.kept = append(r.kept[:0], r.kept[n:]...)
}

// expire drops the batches last sent more than the window ago.
func (r *resendable) expire(now time.Time) {
	n := 0
	for n < len(r.kept) && now.Sub(r.kept[n].sent) > r.window {
		n++
	}
	r.drop(n)
}

// len is how many batches are kept.
func (r *resendable) len() int { return len(r.kept) }

// hasKept reports whether ld holds records that a new leader is sent again:
// only such a batch is numbered and kept.
func hasKept(ld plog.Logs) bool { return anyRecord(ld, keptForResend) }

// toKeep is what of ld, a batch the leader took, is kept for a new leader:
// ld itself, or a copy without its coverage gaps when it has some.
func toKeep(ld plog.Logs) plog.Logs {
	if !anyRecord(ld, func(lr plog.LogRecord) bool { return !keptForResend(lr) }) {
		return ld
	}
	keep := plog.NewLogs()
	ld.CopyTo(keep)
	for _, rl := range keep.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool { return !keptForResend(lr) })
		}
	}
	return keep
}

// anyRecord reports whether a record of ld is one that f says.
func anyRecord(ld plog.Logs, f func(plog.LogRecord) bool) bool {
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if f(lr) {
					return true
				}
			}
		}
	}
	return false
}
