package leaderexporter

import (
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// base is the time of the test records.
var base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

var (
	web = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	api = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "api"}
)

// appendEdge appends the learned edge web ← api on port, which stands for
// flows flows, the newest at base+at.
func appendEdge(sl plog.ScopeLogs, port uint32, flows int64, at time.Duration) {
	e := learning.Edge{
		Backend: v1alpha1.BackendKubernetes, Workload: web, Direction: v1alpha1.DirectionIngress,
		Peer: api, Protocol: "tcp", Port: port,
	}
	e.AppendTo(sl)
	lrs := sl.LogRecords()
	learning.SetObserved(lrs.At(lrs.Len()-1), v1alpha1.PeerClassWorkload, flows, base.Add(at))
}

// appendObservation appends the observation of an edge not learned: web ←
// an outside address on port.
func appendObservation(sl plog.ScopeLogs, port uint32, flows int64, at time.Duration) {
	o := learning.Observation{
		Edge: learning.Edge{
			Backend: v1alpha1.BackendKubernetes, Workload: web, Direction: v1alpha1.DirectionIngress,
			Protocol: "tcp", Port: port,
		},
		Class: v1alpha1.PeerClassExternal, PeerAddress: "203.0.113.7", Flows: flows, Time: base.Add(at),
	}
	o.AppendTo(sl)
}

// appendCandidate appends a violation candidate of web: a flow from api's
// source port srcPort at base+at.
func appendCandidate(sl plog.ScopeLogs, srcPort uint32, at time.Duration) {
	rec := flow.Record{
		Time: base.Add(at), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Source:      flow.Endpoint{Address: "10.0.0.2", Port: srcPort, Namespace: "shop", Pod: "api-1"},
		Destination: flow.Endpoint{Address: "10.0.0.3", Port: 8080, Namespace: "shop", Pod: "web-1"},
	}
	f := plog.NewLogRecord()
	rec.WriteTo(f)
	learning.AppendCandidate(sl, f, web, v1alpha1.DirectionIngress, nil)
}

// newScope returns logs of one resource and scope, and that scope.
func newScope() (plog.Logs, plog.ScopeLogs) {
	ld := plog.NewLogs()
	return ld, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
}

// flowsOf returns a record's network_enforcer.flows, or -1 when it has none.
func flowsOf(lr plog.LogRecord) int64 {
	if v, ok := lr.Attributes().Get(learning.AttrFlows); ok {
		return v.Int()
	}
	return -1
}

// portOf returns a record's destination port.
func portOf(lr plog.LogRecord) int64 {
	v, _ := lr.Attributes().Get(learning.AttrPort)
	return v.Int()
}

// records returns every log record of the batches.
func records(batches ...plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range batches {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) { out = append(out, lr) })
	}
	return out
}
