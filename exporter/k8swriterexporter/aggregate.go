package k8swriterexporter

import (
	"sync"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// proposalKey identifies a proposal: one workload, one direction.
type proposalKey struct {
	workload  workload.Ref
	direction v1alpha1.Direction
}

// peerRef is the other end of an edge: a workload, or an Istio principal.
type peerRef struct {
	workload  workload.Ref
	principal string
}

// portRef is a protocol and a port.
type portRef struct {
	protocol string
	port     uint32
}

// learned is what the flows taught about one proposal.
type learned struct {
	backend v1alpha1.Backend
	peers   map[peerRef]map[portRef]struct{}
}

// aggregate holds everything learned, in memory, and which proposals have learned
// something not yet written. An edge seen again changes nothing, so the writes
// follow the number of distinct edges, not the flow rate.
type aggregate struct {
	mu      sync.Mutex
	learned map[proposalKey]*learned
	dirty   map[proposalKey]struct{}
}

func newAggregate() *aggregate {
	return &aggregate{learned: map[proposalKey]*learned{}, dirty: map[proposalKey]struct{}{}}
}

// add takes one edge and reports whether it was new.
func (a *aggregate) add(e *learning.Edge) bool {
	key := proposalKey{workload: e.Workload, direction: e.Direction}
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.learned[key]
	if l == nil {
		l = &learned{backend: e.Backend, peers: map[peerRef]map[portRef]struct{}{}}
		a.learned[key] = l
	}
	peer := peerRef{workload: e.Peer, principal: e.Principal}
	ports := l.peers[peer]
	if ports == nil {
		ports = map[portRef]struct{}{}
		l.peers[peer] = ports
	}
	port := portRef{protocol: e.Protocol, port: e.Port}
	if _, seen := ports[port]; seen {
		return false
	}
	ports[port] = struct{}{}
	a.dirty[key] = struct{}{}
	return true
}

// takeDirty returns the proposals with unwritten learning, with a copy of what
// each learned, and marks them clean; a failed write marks one dirty again.
func (a *aggregate) takeDirty() map[proposalKey]*learned {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[proposalKey]*learned, len(a.dirty))
	for key := range a.dirty {
		l := a.learned[key]
		c := &learned{backend: l.backend, peers: make(map[peerRef]map[portRef]struct{}, len(l.peers))}
		for p, ports := range l.peers {
			cp := make(map[portRef]struct{}, len(ports))
			for port := range ports {
				cp[port] = struct{}{}
			}
			c.peers[p] = cp
		}
		out[key] = c
	}
	a.dirty = map[proposalKey]struct{}{}
	return out
}

// markDirty asks for key to be written again.
func (a *aggregate) markDirty(key proposalKey) {
	a.mu.Lock()
	a.dirty[key] = struct{}{}
	a.mu.Unlock()
}

// forget drops what was learned about a workload that is gone.
func (a *aggregate) forget(key proposalKey) {
	a.mu.Lock()
	delete(a.learned, key)
	delete(a.dirty, key)
	a.mu.Unlock()
}

// markAllDirty asks for every proposal to be checked, as a new leader does: the
// previous leader may not have written everything.
func (a *aggregate) markAllDirty() {
	a.mu.Lock()
	for key := range a.learned {
		a.dirty[key] = struct{}{}
	}
	a.mu.Unlock()
}
