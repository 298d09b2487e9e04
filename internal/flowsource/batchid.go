package flowsource

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The resource attributes that name a batch of learned records that a reader
// sends the leader: the sending process's name (new with each start) and the
// batch's sequence number, from 1, in the order the reader sends them. The
// leader's writer counts each batch once per object, so that a batch sent
// again (to a new leader, or after an answer that was lost) is not counted
// twice.
const (
	AttrBatchSender = "network_enforcer.batch.sender"
	AttrBatchSeq    = "network_enforcer.batch.seq"
	// AttrBatchTaken says that a leader took the batch before: it is sent
	// again to the next one. The leader that took it reported its
	// violations as events already, or lost them with its queue; the next
	// one counts them in the policies' status only, so that none is
	// reported twice.
	AttrBatchTaken = "network_enforcer.batch.taken"
)

// MarkTaken marks every resource of ld as a batch that a leader took.
func MarkTaken(ld plog.Logs) {
	for _, rl := range ld.ResourceLogs().All() {
		rl.Resource().Attributes().PutBool(AttrBatchTaken, true)
	}
}

// WasTaken reports whether ld is a batch that a leader took before
// (MarkTaken).
func WasTaken(ld plog.Logs) bool {
	if ld.ResourceLogs().Len() == 0 {
		return false
	}
	v, ok := ld.ResourceLogs().At(0).Resource().Attributes().Get(AttrBatchTaken)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// StampBatch names every resource of ld as the batch seq of sender.
func StampBatch(ld plog.Logs, sender string, seq int64) {
	for _, rl := range ld.ResourceLogs().All() {
		rl.Resource().Attributes().PutStr(AttrBatchSender, sender)
		rl.Resource().Attributes().PutInt(AttrBatchSeq, seq)
	}
}

// BatchOf is the batch that res names; false when it names none, or names it
// with a value of the wrong type or a sequence number below 1.
func BatchOf(res pcommon.Resource) (sender string, seq int64, ok bool) {
	s, hasSender := res.Attributes().Get(AttrBatchSender)
	n, hasSeq := res.Attributes().Get(AttrBatchSeq)
	if !hasSender || !hasSeq || s.Type() != pcommon.ValueTypeStr || n.Type() != pcommon.ValueTypeInt ||
		s.Str() == "" || n.Int() < 1 {
		return "", 0, false
	}
	return s.Str(), n.Int(), true
}

// BatchSeqOf is the sequence number of the batch that ld names, 0 for none.
func BatchSeqOf(ld plog.Logs) int64 {
	if ld.ResourceLogs().Len() == 0 {
		return 0
	}
	_, seq, _ := BatchOf(ld.ResourceLogs().At(0).Resource())
	return seq
}
