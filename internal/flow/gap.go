package flow

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// GapEventName is the event name of a gap record: the data plane said that
// flows of a node were lost, or a node could not be read, so that whatever
// learns from the flows may have missed some. A receiver emits one where its
// data plane reports it; the learning processor attributes it to the
// workloads with pods on the node.
const GapEventName = "network_enforcer.flow_gap"

// Attribute keys of a gap record, besides AttrProvider.
const (
	AttrGapCause = "network_enforcer.gap.cause"
	// AttrNode is the node the gap concerns; absent when the data plane does
	// not say, and the gap then concerns every node.
	AttrNode = "k8s.node.name"
	// AttrGapLost is how many events the data plane lost, when it says.
	AttrGapLost = "network_enforcer.gap.lost_events"
)

// GapCause is why flows may be missing.
type GapCause string

// The causes that a data plane reports.
const (
	// GapLostEvents: the data plane dropped flow events before sending them
	// (Hubble's lost-event notices: a full ring buffer or queue).
	GapLostEvents GapCause = "lost_events"
	// GapNodeUnreadable: a node's flows could not be read (Hubble Relay's
	// unavailable node, a node's Hubble stream that broke or never opened):
	// what its datapath emitted meanwhile may be gone.
	GapNodeUnreadable GapCause = "node_unreadable"
)

// Gap is one gap that a data plane reported.
type Gap struct {
	Time     time.Time
	Provider Provider
	Cause    GapCause
	// Node is the node whose flows are missing; empty for every node.
	Node string
	// Lost is how many events were lost; 0 when the data plane does not say.
	Lost int64
}

// AppendTo appends g as a log record to sl.
func (g *Gap) AppendTo(sl plog.ScopeLogs) {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetEventName(GapEventName)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(g.Time))
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	a := lr.Attributes()
	a.EnsureCapacity(4)
	a.PutStr(AttrProvider, string(g.Provider))
	a.PutStr(AttrGapCause, string(g.Cause))
	if g.Node != "" {
		a.PutStr(AttrNode, g.Node)
	}
	if g.Lost > 0 {
		a.PutInt(AttrGapLost, g.Lost)
	}
}

// ReadFrom fills g from a record that AppendTo wrote; false when lr is not a
// gap record, or names no cause.
func (g *Gap) ReadFrom(lr plog.LogRecord) bool {
	if lr.EventName() != GapEventName {
		return false
	}
	a := lr.Attributes()
	*g = Gap{Time: lr.Timestamp().AsTime()}
	if v, ok := a.Get(AttrProvider); ok {
		g.Provider = Provider(v.AsString())
	}
	if v, ok := a.Get(AttrGapCause); ok {
		g.Cause = GapCause(v.AsString())
	}
	if v, ok := a.Get(AttrNode); ok {
		g.Node = v.AsString()
	}
	if v, ok := a.Get(AttrGapLost); ok && v.Type() == pcommon.ValueTypeInt && v.Int() > 0 {
		g.Lost = v.Int()
	}
	return g.Cause != ""
}
