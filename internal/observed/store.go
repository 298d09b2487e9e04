package observed

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	objects    map[types.NamespacedName]*table
	// untracked counts the flow sides of new edges that did not fit.
	untracked int64
	// draining is set by a hand-off: writes are no longer spaced.
	draining bool
}

// table is one object's edges.
type table struct {
	edges map[Key]*entry
	// lastWrite is when the object's observed edges were last written.
	lastWrite time.Time
	// pending is set from the first unwritten flow to the write that takes it.
	pending bool
}

// entry is one edge: its flows as of the last write (base) and since
// (unwritten), and when it was first and last seen.
type entry struct {
	base, unwritten int64
	first, last     time.Time
}

// NewStore returns a store that tracks at most maxTracked edges per object.
func NewStore(maxTracked int) *Store {
	return &Store{maxTracked: maxTracked, objects: map[types.NamespacedName]*table{}}
}

// Add notes flows of the edge k of obj, the newest seen at t. first is true
// when obj had nothing unwritten before: the moment to ask for its write. ok
// is false when k is a new edge and obj tracks maxTracked edges already.
func (s *Store) Add(obj types.NamespacedName, k *Key, flows int64, t time.Time) (first, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.table(obj)
	e := tb.edges[*k]
	if e == nil {
		if len(tb.edges) >= s.maxTracked {
			s.untracked += flows
			return false, false
		}
		e = &entry{first: t, last: t}
		tb.edges[*k] = e
	}
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

// table is obj's table, a new one if it has none; s.mu is held.
func (s *Store) table(obj types.NamespacedName) *table {
	tb := s.objects[obj]
	if tb == nil {
		tb = &table{edges: map[Key]*entry{}}
		s.objects[obj] = tb
	}
	return tb
}

// Wait is how long obj's next write of its observed edges must wait so that
// it comes at most once per interval: 0 when it may be written now.
func (s *Store) Wait(obj types.NamespacedName, interval time.Duration, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[obj]
	if tb == nil || tb.lastWrite.IsZero() || s.draining {
		return 0
	}
	return max(0, tb.lastWrite.Add(interval).Sub(now))
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
