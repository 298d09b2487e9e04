package learningprocessor

import (
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// observation is one edge of the batch, as its flows are counted.
type observation struct {
	learning.Observation
	// record is the index of a learned edge's record in the batch's output,
	// or -1 for an edge that was not learned, whose record the end of the
	// batch appends.
	record int
}

// count adds rec's flows to o.
func (o *observation) count(rec *flow.Record) {
	o.Flows += max(rec.Count, 1)
	if rec.Time.After(o.Time) {
		o.Time = rec.Time
	}
}

// unlearnedKey is what tells apart the batch's edges that were not learned.
type unlearnedKey struct {
	edge             learning.Edge
	class            v1alpha1.PeerClass
	address, dnsName string
}

// learned hands on a learned edge of the batch, once, and counts rec on it.
// A repeat only counts: the writer keeps a set, so once a batch is enough.
func (m *memo) learned(e *learning.Edge, class v1alpha1.PeerClass, rec *flow.Record, sl plog.ScopeLogs) {
	if i, ok := m.edges[*e]; ok {
		m.observations[i].count(rec)
		return
	}
	e.AppendTo(sl)
	m.edges[*e] = len(m.observations)
	m.observations = append(m.observations, observation{
		Observation: learning.Observation{Edge: *e, Class: class}, record: sl.LogRecords().Len() - 1})
	m.observations[len(m.observations)-1].count(rec)
}

// unlearned counts rec on the edge e of a peer, end, that learning leaves
// out: it did not resolve to a workload for reason ("" for an Istio workload
// without an identity), and is not learned as an address block.
func (m *memo) unlearned(e learning.Edge, end *flow.Endpoint, reason workload.Unresolved, rec *flow.Record) {
	k := unlearnedKey{class: observed.ClassOf(reason)}
	if reason == "" {
		k.class = v1alpha1.PeerClassUnidentified
		w, _ := m.resolve(end)
		e.Peer = w
	} else if k.class == v1alpha1.PeerClassBarePod {
		e.Peer = workload.Ref{Namespace: end.Namespace, Kind: observed.KindPod, Name: end.Pod}
	}
	var peer observed.Key
	peer.SetAddress(end.Address)
	k.address, k.dnsName = peer.Address, peer.DNSName
	e.Principal, e.PeerCIDR = "", ""
	k.edge = e
	i, ok := m.unlearnedEdges[k]
	if !ok {
		if m.unlearnedEdges == nil {
			m.unlearnedEdges = map[unlearnedKey]int{}
		}
		i = len(m.observations)
		m.unlearnedEdges[k] = i
		m.observations = append(m.observations, observation{Observation: learning.Observation{
			Edge: e, Class: k.class, PeerAddress: k.address, PeerDNSName: k.dnsName}, record: -1})
	}
	m.observations[i].count(rec)
}

// flushObservations writes the batch's counts: onto each learned edge's
// record, and as a record of its own for each edge that was not learned.
func (m *memo) flushObservations(sl plog.ScopeLogs, now time.Time) {
	records := sl.LogRecords()
	for i := range m.observations {
		o := &m.observations[i]
		if o.Time.IsZero() {
			o.Time = now // a data plane that gives no time: seen now
		}
		if o.record >= 0 {
			learning.SetObserved(records.At(o.record), o.Class, o.Flows, o.Time)
			continue
		}
		o.AppendTo(sl)
	}
}
