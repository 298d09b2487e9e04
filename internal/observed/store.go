package observed

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Store holds the observed edges of the objects of one writer, in memory,
// between that writer's status writes. The status is what lasts: a write
// merges what the store saw since the last write into what the status lists,
// so a restart or a new leader carries on from the status. Each object tracks
// at most maxTracked distinct edges; a new edge beyond that is counted, not
// tracked, so that a port scan cannot grow the store without bound.
type Store struct {
	mu         sync.Mutex
	maxTracked int
	// judgeOf judges the edges of an object that does not have a judge of
	// its last status yet; nil judges every such edge as blocked.
	judgeOf func(types.NamespacedName) Judge
	// countedOf gives the batches that an object's last status counts, for
	// a table made before that status is read; nil gives none.
	countedOf func(types.NamespacedName) []v1alpha1.CountedBatch
	objects   map[types.NamespacedName]*table
	// untracked counts the flow sides of new edges that did not fit.
	untracked int64
	// draining is set by a hand-off: writes are no longer spaced.
	draining bool
	// badEstimators counts the statuses whose estimators did not decode.
	badEstimators int64
	// senders are the senders of the batches taken, for WrittenThrough.
	senders map[string]senderSeen
}

// table is one object's edges.
type table struct {
	edges map[Key]*entry
	// lastWrite is when the object's observed edges were last written.
	lastWrite time.Time
	// pending is set from the first unwritten flow to the write that takes it.
	pending bool
	// est counts the distinct edges, tracked or not.
	est estimators
	// judge is the verdict of the spec as of the last status, for the
	// edges not tracked, which are judged when they are seen.
	judge Judge
	// untracked is the flows of edges not tracked since the last write, and
	// the use they add to the rules that allow them.
	untracked    int64
	untrackedUse map[string]Use
	// restored is set once the status's estimators were read.
	restored bool
	// notTracked is set while edges that an earlier writer counted, and did
	// not list, are counted by the estimators only.
	notTracked bool
	// notTrackedEdges is how many edges the last status counted that are not
	// tracked.
	notTrackedEdges int
	// counted is, by sender, the last batch that the counts include.
	counted map[string]counted
	// unwrittenBatches are, by sender, the batches whose records the table
	// holds unwritten; held is what the next status write may count as
	// written (Hold), nil when not held; lastCovered what the last status
	// made counted (NotWritten).
	unwrittenBatches  map[string]pendingBatches
	held, lastCovered map[string]int64
	// What changed since the last write (Change): fresh is how many
	// tracked edges have flows and none written, flows the flows not
	// written (tracked or not), written the flows the last write counted
	// on the tracked edges. Add keeps them; Status and Written count them
	// again.
	fresh          int
	flows, written int64
}

// entry is one edge: its flows as of the last write (base) and since
// (unwritten), and when it was first and last seen.
type entry struct {
	base, unwritten int64
	first, last     time.Time
}

// NewStore returns a store that tracks at most maxTracked edges per object.
// judgeOf, when set, gives the judge of an object's spec for the edges that
// come past the tracking limit before the object's first status of this run;
// countedOf, when set, the batches that its last status counts (AddBatch).
func NewStore(maxTracked int, judgeOf func(types.NamespacedName) Judge,
	countedOf func(types.NamespacedName) []v1alpha1.CountedBatch) *Store {
	return &Store{maxTracked: maxTracked, judgeOf: judgeOf, countedOf: countedOf, objects: map[types.NamespacedName]*table{}}
}

// Add notes flows of the edge k of obj, the newest seen at t. first is true
// when obj had nothing unwritten before: the moment to ask for its write. ok
// is false when k is a new edge and obj tracks maxTracked edges already.
func (s *Store) Add(obj types.NamespacedName, k *Key, flows int64, t time.Time) (first, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(s.table(obj), obj, k, flows, t)
}

// addLocked is Add on obj's table tb; s.mu is held.
func (s *Store) addLocked(tb *table, obj types.NamespacedName, k *Key, flows int64, t time.Time) (first, ok bool) {
	e := tb.edges[*k]
	if e == nil {
		if len(tb.edges) >= s.maxTracked {
			s.untracked += flows
			tb.flows += flows
			s.addUntracked(obj, tb, k, flows, t)
			first = !tb.pending
			tb.pending = true
			return first, false
		}
		tb.est.see(k, false)
		e = &entry{first: t, last: t}
		tb.edges[*k] = e
	}
	if e.base == 0 && e.unwritten == 0 && flows > 0 {
		tb.fresh++
	}
	tb.flows += flows
	e.unwritten += flows
	if t.Before(e.first) {
		e.first = t
	}
	if t.After(e.last) {
		e.last = t
	}
	first = !tb.pending
	tb.pending = true
	return first, true
}

// addUntracked counts flows of k, an edge that does not fit in obj's
// tracking: it is judged now, by the spec as of the last status, and counted
// by the estimators; the flows count for the rule that allows it.
func (s *Store) addUntracked(obj types.NamespacedName, tb *table, k *Key, flows int64, t time.Time) {
	tb.est.limitReached = true
	tb.untracked += flows
	if tb.judge == nil && s.judgeOf != nil {
		tb.judge = s.judgeOf(obj)
	}
	rule, allowed := "", false
	if tb.judge != nil {
		rule, allowed = tb.judge(k)
	}
	tb.est.see(k, !allowed)
	if allowed && rule != "" {
		if tb.untrackedUse == nil {
			tb.untrackedUse = map[string]Use{}
		}
		r := tb.untrackedUse[rule]
		r.Flows += flows
		r.Last = maxTime(r.Last, t)
		tb.untrackedUse[rule] = r
	}
}

// table is obj's table, a new one if it has none; s.mu is held.
func (s *Store) table(obj types.NamespacedName) *table {
	tb := s.objects[obj]
	if tb == nil {
		tb = &table{edges: map[Key]*entry{}}
		s.restoreCounted(tb, obj)
		s.objects[obj] = tb
	}
	return tb
}

// Wait is how long obj's next write of its observed edges must wait so that
// it comes at most once per interval: 0 when it may be written now, and
// while it holds unwritten records of a silent sender (HeldBySilent).
func (s *Store) Wait(obj types.NamespacedName, interval time.Duration, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	if tb == nil || tb.lastWrite.IsZero() || s.draining || s.holdsSilentLocked(tb) {
		return 0
	}
	return max(0, tb.lastWrite.Add(interval).Sub(now))
}

// Change is how much obj's evidence changed since its last write, for the
// order of the writes: fresh is how many of the edges it tracks have flows
// and none written yet (edges its status does not list), flows the flows seen
// since the last write, of every edge, and written the flows that the last
// write counted on the tracked edges. All are 0 for an object it holds
// nothing of.
func (s *Store) Change(obj types.NamespacedName) (fresh int, flows, written int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	if tb == nil {
		return 0, 0, 0
	}
	return tb.fresh, tb.flows, tb.written
}

// recount counts again what changed since the last write (Change), after a
// status's counts were merged or written; s.mu is held.
func (tb *table) recount() {
	tb.fresh, tb.flows, tb.written = 0, tb.untracked, 0
	for _, e := range tb.edges {
		if e.base == 0 && e.unwritten > 0 {
			tb.fresh++
		}
		tb.flows += e.unwritten
		tb.written += e.base
	}
}

// Pending reports whether obj has flows that no write took yet.
func (s *Store) Pending(obj types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	return tb != nil && tb.pending
}

// HandOff is the store's part in a leader's hand-off: it returns the objects
// with flows that no write took yet, with the writer's others, each once; from
// now on Wait no longer spaces their writes, so that each is written at once.
func (s *Store) HandOff(others ...types.NamespacedName) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	objs := others
	for obj, tb := range s.objects {
		if tb.pending {
			objs = append(objs, obj)
		}
	}
	slices.SortFunc(objs, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(objs)
}

// Forget drops what the store holds for an object that is gone.
func (s *Store) Forget(obj types.NamespacedName) {
	s.mu.Lock()
	delete(s.objects, obj)
	s.mu.Unlock()
}

// Untracked is how many flow sides of new edges did not fit, since the start.
func (s *Store) Untracked() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.untracked
}

// NotTracked is how many distinct edges the last statuses counted that the
// store does not track, over all objects: estimated.
func (s *Store) NotTracked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, tb := range s.objects {
		n += tb.notTrackedEdges
	}
	return n
}

// BadEstimators is how many statuses had estimators that did not decode,
// since the start: their counts started again from what they list.
func (s *Store) BadEstimators() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.badEstimators
}

// Edges is how many edges the store tracks, over all objects.
func (s *Store) Edges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, tb := range s.objects {
		n += len(tb.edges)
	}
	return n
}

// Newly is the edge of obj, among those it tracks, that was last seen most
// recently of those that was did not allow and now does: an edge that a
// write of the spec, from was to now, learned. False when none is tracked.
func (s *Store) Newly(obj types.NamespacedName, was, now Judge) (Key, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	if tb == nil {
		return Key{}, false
	}
	var newest Key
	var last time.Time
	found := false
	for k, e := range tb.edges {
		if _, allowed := now(&k); !allowed {
			continue
		}
		if was != nil {
			if _, allowed := was(&k); allowed {
				continue
			}
		}
		if !found || e.last.After(last) || (e.last.Equal(last) && keyLess(k, newest)) {
			newest, last, found = k, e.last, true
		}
	}
	return newest, found
}

// keyLess orders keys as newestFirst orders their edges, for a stable pick
// among edges last seen at once.
func keyLess(a, b Key) bool {
	return newestFirst(v1alpha1.ObservedEdge{Peer: a.Peer(), Protocol: a.Protocol, Port: a.Port},
		v1alpha1.ObservedEdge{Peer: b.Peer(), Protocol: b.Protocol, Port: b.Port}) < 0
}
