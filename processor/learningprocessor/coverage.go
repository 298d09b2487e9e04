package learningprocessor

import (
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// coverageCauses are the proposal's names of the data plane's gap causes.
var coverageCauses = map[flow.GapCause]v1alpha1.CoverageGapCause{
	flow.GapLostEvents:     v1alpha1.CoverageLostEvents,
	flow.GapNodeUnreadable: v1alpha1.CoverageNodeUnreadable,
}

// reasonMalformedGap counts a gap record without a cause that learning
// knows: it is dropped, not guessed at.
const reasonMalformedGap = "malformed_gap"

// gap attributes a gap that the data plane reported to the workloads with a
// running pod on its node (every node's, when it names none), as a coverage
// gap of each: their learning may have missed flows.
func (p *learningProcessor) gap(lr plog.LogRecord, sl plog.ScopeLogs, c *counts) {
	var g flow.Gap
	var cause v1alpha1.CoverageGapCause
	ok := g.ReadFrom(lr)
	if ok {
		cause, ok = coverageCauses[g.Cause]
	}
	if !ok {
		c.drop(reasonMalformedGap)
		return
	}
	c.gap(cause, 1)
	backend := p.backendOf(g.Provider)
	for _, w := range p.enforcer.WorkloadsOn(g.Node) {
		lg := learning.Gap{Workload: w, Backend: backend, Cause: cause, Node: g.Node, Events: g.Lost, Time: g.Time}
		lg.AppendTo(sl)
	}
}

// unattributedKey is a workload and direction whose flows the batch could not
// attribute, and the backend of its proposals.
type unattributedKey struct {
	workload  workload.Ref
	direction v1alpha1.Direction
	backend   v1alpha1.Backend
}

// unattributed is how many of the batch's flows of a workload could not be
// attributed, and the newest one's time.
type unattributed struct {
	flows int64
	time  time.Time
}

// unattributedFlow counts a flow of w in direction d that could not be
// attributed.
func (m *memo) unattributedFlow(w workload.Ref, d v1alpha1.Direction, rec *flow.Record, c *counts) {
	if m.unattributed == nil {
		m.unattributed = map[unattributedKey]*unattributed{}
	}
	k := unattributedKey{workload: w, direction: d, backend: m.p.backendOf(rec.Provider)}
	u := m.unattributed[k]
	if u == nil {
		u = &unattributed{}
		m.unattributed[k] = u
	}
	n := max(rec.Count, 1)
	u.flows += n
	if rec.Time.After(u.time) {
		u.time = rec.Time
	}
	c.gap(v1alpha1.CoverageUnattributed, n)
}

// flushUnattributed hands on, for each workload whose flows the batch could
// not attribute, one coverage gap that counts them.
func (m *memo) flushUnattributed(sl plog.ScopeLogs) {
	for k, u := range m.unattributed {
		g := learning.Gap{Workload: k.workload, Backend: k.backend, Direction: k.direction, Cause: v1alpha1.CoverageUnattributed,
			Events: u.flows, Time: u.time}
		g.AppendTo(sl)
	}
}
