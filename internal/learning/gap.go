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
	return g.Cause != "" && g.Workload.Name != ""
}
