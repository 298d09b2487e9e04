package learning

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// GapEventName is the event name of a coverage gap: something that learning
// may have missed of a workload's flows, attributed by the processor (a node
// gap to the workloads with pods on that node, an unattributed flow to the
// workload the data plane names). The writer shows it on the workload's
// proposals.
const GapEventName = "network_enforcer.coverage_gap"

// Attribute keys of a coverage gap, besides AttrBackend and AttrWorkload.
const (
	AttrGapCause  = "network_enforcer.gap.cause"
	AttrGapNode   = "k8s.node.name"
	AttrGapEvents = "network_enforcer.gap.events"
	// AttrGapReports is how many reports a gap record stands for, when it
	// stands for more than one: a reader merges the gaps of one workload,
	// cause and node over its aggregation interval, as it merges edges.
	AttrGapReports = "network_enforcer.gap.reports"
)

// Gap is one coverage gap of a workload.
type Gap struct {
	Workload workload.Ref
	Backend  v1alpha1.Backend
	// Direction is the one direction whose learning missed flows (an
	// unattributed flow's); empty for both (a node's gap).
	Direction v1alpha1.Direction
	Cause     v1alpha1.CoverageGapCause
	// Node is the node it concerns; empty for every node, or for a cause
	// that concerns no node.
	Node string
	// Events is how many events were lost, or flows not attributed; 0 when
	// not known.
	Events int64
	Time   time.Time
	// Reports is how many reports of the data plane (or batches of
	// unattributed flows) the gap stands for, when more than one were
	// merged; 0 for one.
	Reports int64
	// First is when the first of the merged reports came, when it is
	// before Time; zero otherwise.
	First time.Time
}

// ReportCount is how many reports g stands for: at least one.
func (g *Gap) ReportCount() int64 { return max(1, g.Reports) }

// FirstTime is when the first report of g came.
func (g *Gap) FirstTime() time.Time {
	if !g.First.IsZero() && g.First.Before(g.Time) {
		return g.First
	}
	return g.Time
}

// AppendTo appends g as a log record to sl.
func (g *Gap) AppendTo(sl plog.ScopeLogs) {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetEventName(GapEventName)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(g.Time))
	a := lr.Attributes()
	a.EnsureCapacity(6)
	a.PutStr(AttrBackend, string(g.Backend))
	a.PutStr(AttrWorkload, g.Workload.String())
	if g.Direction != "" {
		a.PutStr(AttrDirection, string(g.Direction))
	}
	a.PutStr(AttrGapCause, string(g.Cause))
	if g.Node != "" {
		a.PutStr(AttrGapNode, g.Node)
	}
	if g.Events > 0 {
		a.PutInt(AttrGapEvents, g.Events)
	}
	if g.Reports > 1 {
		a.PutInt(AttrGapReports, g.Reports)
	}
	if first := g.FirstTime(); first.Before(g.Time) {
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(first))
	}
}

// ReadFrom fills g from a record that AppendTo wrote; false when lr is not a
// coverage gap, or not a whole one.
func (g *Gap) ReadFrom(lr plog.LogRecord) bool {
	if lr.EventName() != GapEventName {
		return false
	}
	a := lr.Attributes()
	*g = Gap{
		Workload:  workload.ParseRef(str(a, AttrWorkload)),
		Backend:   v1alpha1.Backend(str(a, AttrBackend)),
		Direction: v1alpha1.Direction(str(a, AttrDirection)),
		Cause:     v1alpha1.CoverageGapCause(str(a, AttrGapCause)),
		Node:      str(a, AttrGapNode),
		Time:      lr.Timestamp().AsTime(),
	}
	if v, ok := a.Get(AttrGapEvents); ok && v.Type() == pcommon.ValueTypeInt && v.Int() > 0 {
		g.Events = v.Int()
	}
	if v, ok := a.Get(AttrGapReports); ok && v.Type() == pcommon.ValueTypeInt && v.Int() > 1 {
		g.Reports = v.Int()
	}
	// A merged gap carries its first report's time as its observed
	// timestamp, as a merged edge carries its first flow's.
	if first := lr.ObservedTimestamp(); first != 0 && first < lr.Timestamp() {
		g.First = first.AsTime()
	}
	return g.Cause != "" && g.Workload.Name != ""
}
