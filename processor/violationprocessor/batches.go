package violationprocessor

import (
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// In nodes mode the readers number their batches, and keep each one that the
// leader took until every status that counts it is written (the written-
// through marks of the leader's membership Lease): a leader that dies holds
// what it took in memory, and the next leader is sent it again. A policy's
// status says which batches it counts (status.observed.countedBatches); the
// violation processor counts a batch's violations and observed edges of a
// policy once, and skips, policy by policy, a batch sent again that the
// status counts already. Its violation events went with the leader that took
// the batch first: a batch that a leader took before (flowsource.WasTaken) is
// counted in the status and sends no event, so that none is reported twice.

// batchOf is the batch that ld names, the zero Batch for records of no
// sender's batch (relay mode, the node agents), which are always counted.
func batchOf(ld plog.Logs) observed.Batch {
	if ld.ResourceLogs().Len() == 0 {
		return observed.Batch{}
	}
	sender, seq, ok := flowsource.BatchOf(ld.ResourceLogs().At(0).Resource())
	if !ok {
		return observed.Batch{}
	}
	return observed.Batch{Sender: sender, Seq: seq}
}

// countedAlready reports whether policy's status counts the memo's batch
// already, asked once per policy and batch, before the batch is added.
func (p *violationProcessor) countedAlready(m *memo, policy types.NamespacedName) bool {
	if m.batch.Sender == "" || !p.cfg.Observe {
		return false
	}
	counted, ok := m.counted[policy]
	if !ok {
		counted = p.observed.Counts(policy, m.batch)
		if m.counted == nil {
			m.counted = map[types.NamespacedName]bool{}
		}
		m.counted[policy] = counted
	}
	return counted
}

// addBatch adds the batch's observed edges to the store, as one batch, and
// asks for the status write of each policy that had nothing unwritten. A
// reader's batch with none is noted all the same, so that the written-through
// mark goes past it.
func (p *violationProcessor) addBatch(m *memo) {
	if !p.cfg.Observe || (m.batch.Sender == "" && len(m.seen) == 0) {
		return
	}
	now := time.Now()
	first, _ := p.observed.AddBatch(m.batch, m.seen, now)
	for _, name := range first {
		p.status.Enqueue(name, max(time.Second, p.observed.Wait(name, p.cfg.ObservedInterval, now)))
	}
}

// countedOf is the batches that policy name's status counts, as the cache has
// it: a new leader skips the batches sent again that its predecessor wrote.
func (p *violationProcessor) countedOf(name types.NamespacedName) []v1alpha1.CountedBatch {
	if p.enforcer == nil {
		return nil
	}
	pol, ok := p.enforcer.Policy(name)
	if !ok {
		return nil
	}
	return pol.Status.ObservedTraffic.CountedBatches
}

// publishWritten tells the membership, while this replica leads, how far the
// policies' written statuses count each reader's batches; the readers keep
// the later ones for a next leader.
func (p *violationProcessor) publishWritten() func() map[string]int64 {
	return func() map[string]int64 { return p.observed.WrittenThrough(time.Now()) }
}
