package k8swriterexporter

import (
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// proposalKey identifies a proposal: one workload, one direction, and for an
// amendment the policy that it amends.
type proposalKey struct {
	workload  workload.Ref
	direction v1alpha1.Direction
	// amends is the name of the policy that an amendment amends; empty for
	// a first proposal.
	amends string
}

// peerRef is the other end of an edge: a workload, or an Istio principal.
type peerRef struct {
	workload  workload.Ref
	principal string
	cidr      string // an address block outside the cluster's workloads (spec_ipblock.go)
	// entity and dnsName are a peer beyond the workloads, by what it is
	// (spec_outside.go).
	entity  v1alpha1.Entity
	dnsName string
}

// portRef is a protocol and a port.
type portRef struct {
	protocol string
	port     uint32
}

// learned is what the flows taught about one proposal.
type learned struct {
	backend v1alpha1.Backend
	name    types.NamespacedName
	// peers is every edge learned, so that an edge seen again is known.
	peers edgeSet
	// unwritten is the edges learned since the last write that took them:
	// a write adds only these to the proposal, so that an edge that a
	// person removed from its spec stays removed (the edge then shows as
	// WouldBlock in its observed edges).
	unwritten edgeSet
	// origins are, for an amendment, the first flow of each edge and the
	// revisions that made it.
	origins map[edgeRef]origin
}

// edgeRef is one edge: a peer, a protocol and a port.
type edgeRef struct {
	peer peerRef
	port portRef
}

// origin is the first flow of an amendment's edge: when, and the revisions
// of the pods at its ends.
type origin struct {
	first                        time.Time
	targetRevision, peerRevision string
}

// edgeSet is a set of edges, by peer.
type edgeSet map[peerRef]map[portRef]struct{}

// add adds an edge; false when the set has it already.
func (s edgeSet) add(peer peerRef, port portRef) bool {
	ports := s[peer]
	if ports == nil {
		ports = map[portRef]struct{}{}
		s[peer] = ports
	}
	if _, ok := ports[port]; ok {
		return false
	}
	ports[port] = struct{}{}
	return true
}

// aggregate holds everything learned, in memory, and which proposals have learned
// something not yet written. An edge seen again changes nothing, so the writes
// follow the number of distinct edges, not the flow rate.
type aggregate struct {
	mu      sync.Mutex
	learned map[proposalKey]*learned
	dirty   map[proposalKey]struct{}
	// writing holds the proposals whose write is under way.
	writing map[proposalKey]struct{}
	// keys finds a proposal's key by its object name, as the work queue names it.
	keys map[types.NamespacedName]proposalKey
	// refused holds, by proposal, the last write the API server refused for
	// what it held, so that the same write is not tried again.
	refused map[proposalKey]refusal
}

// refusal is a write that the API server refused: the spec it carried, onto
// the proposal of that resourceVersion ("" when the proposal did not exist).
type refusal struct {
	spec            v1alpha1.PolicySpec
	resourceVersion string
}

func newAggregate() *aggregate {
	return &aggregate{learned: map[proposalKey]*learned{}, dirty: map[proposalKey]struct{}{},
		writing: map[proposalKey]struct{}{}, keys: map[types.NamespacedName]proposalKey{},
		refused: map[proposalKey]refusal{}}
}

// nameOf is the name of key's proposal.
func nameOf(key proposalKey) types.NamespacedName {
	if key.amends != "" {
		return types.NamespacedName{Namespace: key.workload.Namespace, Name: AmendmentName(key.amends)}
	}
	return types.NamespacedName{Namespace: key.workload.Namespace, Name: ProposalName(key.workload, key.direction)}
}

// add takes one edge. It returns the proposal's name, and whether the edge
// made the proposal dirty: then it needs a write, which nobody asked for yet.
func (a *aggregate) add(e *learning.Edge) (types.NamespacedName, bool) {
	return a.addTo(proposalKey{workload: e.Workload, direction: e.Direction}, e, nil)
}

// addAmendment takes one edge of a policy's amendment, and the first flow
// of each edge with the revisions that made it.
func (a *aggregate) addAmendment(am *learning.Amendment) (types.NamespacedName, bool) {
	key := proposalKey{workload: am.Workload, direction: am.Direction, amends: am.Policy}
	return a.addTo(key, &am.Edge, &origin{first: am.Time, targetRevision: am.TargetRevision, peerRevision: am.PeerRevision})
}

func (a *aggregate) addTo(key proposalKey, e *learning.Edge, o *origin) (types.NamespacedName, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.learned[key]
	if l == nil {
		l = &learned{backend: e.Backend, peers: edgeSet{}, unwritten: edgeSet{}, name: nameOf(key)}
		a.learned[key] = l
		a.keys[l.name] = key
	}
	peer := peerRef{workload: e.Peer, principal: e.Principal, cidr: e.PeerCIDR, entity: e.PeerEntity, dnsName: e.PeerName}
	port := portRef{protocol: e.Protocol, port: e.Port}
	if o != nil {
		if l.origins == nil {
			l.origins = map[edgeRef]origin{}
		}
		if held, ok := l.origins[edgeRef{peer, port}]; !ok || o.first.Before(held.first) {
			l.origins[edgeRef{peer, port}] = *o
		}
	}
	if !l.peers.add(peer, port) {
		return l.name, false
	}
	l.unwritten.add(peer, port)
	if _, dirty := a.dirty[key]; dirty {
		return l.name, false
	}
	a.dirty[key] = struct{}{}
	return l.name, true
}

// take returns, for the proposal name, its key and a copy of what it learned
// and did not write yet, and marks it clean; a failed write marks it dirty
// again, and settle forgets what a write took. ok is false when nothing is
// learned for that name.
func (a *aggregate) take(name types.NamespacedName) (proposalKey, *learned, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key, ok := a.keys[name]
	if !ok {
		return proposalKey{}, nil, false
	}
	delete(a.dirty, key)
	a.writing[key] = struct{}{}
	l := a.learned[key]
	c := &learned{backend: l.backend, name: l.name, peers: make(edgeSet, len(l.unwritten))}
	for p, ports := range l.unwritten {
		cp := make(map[portRef]struct{}, len(ports))
		for port := range ports {
			cp[port] = struct{}{}
		}
		c.peers[p] = cp
	}
	return key, c, true
}

// amendmentOf returns a copy of everything learned for an amendment's key
// (every edge, written or not) and the origins of its edges.
func (a *aggregate) amendmentOf(key proposalKey) (edgeSet, map[edgeRef]origin) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.learned[key]
	if l == nil {
		return edgeSet{}, nil
	}
	all := make(edgeSet, len(l.peers))
	for p, ports := range l.peers {
		for port := range ports {
			all.add(p, port)
		}
	}
	origins := make(map[edgeRef]origin, len(l.origins))
	for k, o := range l.origins {
		origins[k] = o
	}
	return all, origins
}

// settle forgets, as unwritten, the edges of taken: the write that took them
// is done (or had nothing to do).
func (a *aggregate) settle(key proposalKey, taken *learned) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.learned[key]
	if l == nil {
		return
	}
	for p, ports := range taken.peers {
		left := l.unwritten[p]
		for port := range ports {
			delete(left, port)
		}
		if len(left) == 0 {
			delete(l.unwritten, p)
		}
	}
}

// isRefused reports whether the last write of key's proposal was refused.
func (a *aggregate) isRefused(key proposalKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.refused[key]
	return ok
}

// written ends the write of key that take began; a failed one is marked dirty
// again first.
func (a *aggregate) written(key proposalKey) {
	a.mu.Lock()
	delete(a.writing, key)
	a.mu.Unlock()
}

// unwritten is how many proposals have learned something whose write has not
// finished: dirty, or being written.
func (a *aggregate) unwritten() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := len(a.dirty)
	for key := range a.writing {
		if _, dirty := a.dirty[key]; !dirty {
			n++
		}
	}
	return n
}

// dirtyNames returns the proposals with something learned to write.
func (a *aggregate) dirtyNames() []types.NamespacedName {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]types.NamespacedName, 0, len(a.dirty))
	for key := range a.dirty {
		names = append(names, a.learned[key].name)
	}
	return names
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
	delete(a.keys, nameOf(key))
	delete(a.learned, key)
	delete(a.dirty, key)
	delete(a.refused, key)
	a.mu.Unlock()
}

// refuse remembers that the API server refused r for key's proposal; a
// refusal of nil forgets it, after a write that went through.
func (a *aggregate) refuse(key proposalKey, r *refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r == nil {
		delete(a.refused, key)
		return
	}
	a.refused[key] = *r
}

// wasRefused reports whether writing spec onto the proposal of that
// resourceVersion is the write that the API server refused last.
func (a *aggregate) wasRefused(key proposalKey, spec *v1alpha1.PolicySpec, resourceVersion string) bool {
	a.mu.Lock()
	r, ok := a.refused[key]
	a.mu.Unlock()
	return ok && r.resourceVersion == resourceVersion && apiequality.Semantic.DeepEqual(&r.spec, spec)
}

// markAllDirty asks for every proposal to be checked, as a new leader does (the
// previous leader may not have written everything), and returns their names.
func (a *aggregate) markAllDirty() []types.NamespacedName {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]types.NamespacedName, 0, len(a.learned))
	for key, l := range a.learned {
		a.dirty[key] = struct{}{}
		names = append(names, l.name)
	}
	return names
}
