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

// learned hands on a learned edge of the batch, once, and returns the index
// of its observation, on which the caller counts each of its flows: the
// writer keeps a set, so once a batch is enough.
func (m *memo) learned(e *learning.Edge, class v1alpha1.PeerClass, sl plog.ScopeLogs) int {
	if i, ok := m.edges[*e]; ok {
		return i
	}
	record, ok := m.names[*e] // handed on already, as a further name
	if ok {
		delete(m.names, *e)
	} else {
		e.AppendTo(sl)
		record = sl.LogRecords().Len() - 1
	}
	i := len(m.observations)
	m.edges[*e] = i
	m.observations = append(m.observations, observation{
		Observation: learning.Observation{Edge: *e, Class: class}, record: record})
	return i
}

// learnedName hands on e, an edge learned for one of a peer's further DNS
// names, once per batch and without evidence of its own: the flows are
// counted on the edge of its first name.
func (m *memo) learnedName(e *learning.Edge, sl plog.ScopeLogs) {
	if _, ok := m.edges[*e]; ok {
		return
	}
	if _, ok := m.names[*e]; ok {
		return
	}
	if m.names == nil {
		m.names = map[learning.Edge]int{}
	}
	e.AppendTo(sl)
	m.names[*e] = sl.LogRecords().Len() - 1
}

// unlearned returns the index of the observation of the edge e of a peer,
// end, that learning leaves out: it did not resolve to a workload for reason
// ("" for an Istio workload without an identity), and is not learned as an
// address block.
func (m *memo) unlearned(e learning.Edge, end *flow.Endpoint, reason workload.Unresolved, at time.Time) int {
	o, k := m.unlearnedObservation(e, end, reason, at)
	i, ok := m.unlearnedEdges[k]
	if !ok {
		if m.unlearnedEdges == nil {
			m.unlearnedEdges = map[unlearnedKey]int{}
		}
		i = len(m.observations)
		m.unlearnedEdges[k] = i
		m.observations = append(m.observations, observation{Observation: o, record: -1})
	}
	return i
}

// unlearnedObservation is the observation, and its key in the batch, of the
// edge e of a peer, end, that learning leaves out (unlearned): the peer by
// its class, address and name, a bare pod by its name.
func (m *memo) unlearnedObservation(e learning.Edge, end *flow.Endpoint, reason workload.Unresolved, at time.Time) (learning.Observation, unlearnedKey) {
	k := unlearnedKey{class: observed.ClassOf(reason)}
	if reason == "" {
		k.class = v1alpha1.PeerClassUnidentified
		w, _ := m.resolve(end, at)
		e.Peer = w
	} else if k.class == v1alpha1.PeerClassBarePod {
		e.Peer = workload.Ref{Namespace: end.Namespace, Kind: observed.KindPod, Name: end.Pod}
	}
	var peer observed.Key
	peer.SetAddress(end.Address)
	k.address, k.dnsName = peer.Address, peer.DNSName
	e.Principal, e.PeerCIDR = "", ""
	k.edge = e
	return learning.Observation{Edge: e, Class: k.class, PeerAddress: k.address, PeerDNSName: k.dnsName}, k
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
