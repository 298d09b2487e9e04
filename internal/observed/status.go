package observed

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Judge is the verdict of an object's current spec on an edge: whether the
// spec allows it, and the rule that does ("" when none, or when the spec does
// not govern the direction).
type Judge func(k *Key) (rule string, allowed bool)

// Use is what the flows written now add to one rule's use.
type Use struct {
	Flows int64
	Last  time.Time
}

// Update is an object's observed edges as its next status write carries them.
type Update struct {
	// Traffic is status.observed and its totals.
	Traffic v1alpha1.ObservedTraffic
	// WouldBlock counts the edges that the spec would block, by peer class:
	// estimates when Traffic.Estimated is set.
	WouldBlock map[v1alpha1.PeerClass]int
	// Rules is, by rule name, the use that the flows not yet written add.
	Rules map[string]Use
	// Err is set when the status's estimators could not be read: the counts
	// start again from what the status lists.
	Err error

	store *Store
	obj   types.NamespacedName
	// taken is the unwritten flows that this update carries, by edge, and
	// totals their flows with them; untracked is the flows of edges not
	// tracked that it carries.
	taken, totals map[Key]int64
	untracked     int64
	untrackedUse  map[string]Use
	// estimated is set for the classes whose counts are estimates; tracked
	// is how many edges that protect would block are tracked.
	estimated map[v1alpha1.PeerClass]bool
	tracked   int
	// limit is the tracking limit, when it was reached.
	limit int
	// notTracked is how many of the edges counted are not tracked.
	notTracked int
	// covered is, by sender, the last batch whose records the update
	// writes (WrittenThrough).
	covered map[string]int64
}

// Status merges what the store holds for obj into cur, the object's observed
// edges as the API server has them: each edge's flows are the status's (or,
// for an edge the status no longer lists, the store's) plus those seen since
// the last write. Every tracked edge is judged again by judge, so a spec edit
// changes the verdicts at once. The newest maxListed edges are listed, newest
// first; the totals count every tracked edge exactly and, once some edges
// are not tracked (past the tracking limit, or counted by an earlier writer
// and not listed), the estimators count them all. Call Written once the
// status is written, so that its flows are not counted again.
func (s *Store) Status(obj types.NamespacedName, cur *v1alpha1.ObservedTraffic, judge Judge, maxListed int) *Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.table(obj)
	tb.judge = judge
	u := &Update{store: s, obj: obj, WouldBlock: map[v1alpha1.PeerClass]int{}, Rules: map[string]Use{},
		taken: map[Key]int64{}, totals: map[Key]int64{}, estimated: map[v1alpha1.PeerClass]bool{}}
	if !tb.restored {
		tb.restored = true
		if cur.Estimators != nil {
			if err := tb.est.restore(cur.Estimators); err != nil {
				u.Err = err
				s.badEstimators++
				tb.est = estimators{}
			}
		}
		tb.notTracked = cur.Estimated || cur.OmittedEdges > 0
	}
	// The status is newer than the cache that the table was made from when
	// this run wrote it already: what it counts, the table does.
	tb.mergeCounted(cur.CountedBatches)
	for i := range cur.Observed {
		o := &cur.Observed[i]
		k := KeyOf(o)
		e := tb.edges[k]
		if e == nil {
			// Written by an earlier run or leader: it counts on from there.
			e = &entry{first: o.FirstSeen.Time, last: o.LastSeen.Time}
			tb.edges[k] = e
			tb.est.see(&k, false)
		}
		e.base = o.Flows
		e.first, e.last = minTime(e.first, o.FirstSeen.Time), maxTime(e.last, o.LastSeen.Time)
	}
	tb.recount()
	counts := map[v1alpha1.PeerClass]*classCount{}
	edges := make([]v1alpha1.ObservedEdge, 0, len(tb.edges))
	for k, e := range tb.edges {
		rule, allowed := judge(&k)
		c := counts[k.Class]
		if c == nil {
			c = &classCount{}
			counts[k.Class] = c
		}
		c.trackedSeen++
		edge := v1alpha1.ObservedEdge{Peer: k.Peer(), Protocol: k.Protocol, Port: k.Port, Flows: e.base + e.unwritten,
			FirstSeen: seconds(e.first), LastSeen: seconds(e.last), Verdict: v1alpha1.VerdictAllowed}
		if !allowed {
			edge.Verdict = v1alpha1.VerdictWouldBlock
			c.trackedBlocked++
			c.blockedKeys = append(c.blockedKeys, k)
		}
		if e.unwritten > 0 {
			u.taken[k] = e.unwritten
			if rule != "" {
				u.addUse(rule, e.unwritten, e.last)
			}
		}
		u.totals[k] = edge.Flows
		edges = append(edges, edge)
	}
	u.untracked = tb.untracked
	u.untrackedUse = maps.Clone(tb.untrackedUse)
	for rule, use := range tb.untrackedUse {
		u.addUse(rule, use.Flows, use.Last)
	}
	slices.SortFunc(edges, newestFirst)
	u.Traffic = v1alpha1.ObservedTraffic{OmittedEdges: int32(max(0, len(edges)-maxListed))}
	if len(edges) > 0 {
		u.Traffic.Observed = edges[:min(len(edges), maxListed)]
	}
	s.countEdges(tb, u, counts)
	u.Traffic.CountedBatches = tb.countedBatches(time.Now())
	u.covered = tb.coveredLocked()
	if tb.est.limitReached {
		u.limit = s.maxTracked
	}
	return u
}

// countEdges sets the update's totals from the tracked edges' counts and,
// when some edges are not tracked, from the estimators, which the status
// then carries to the next writer.
func (s *Store) countEdges(tb *table, u *Update, counts map[v1alpha1.PeerClass]*classCount) {
	tracked := 0
	for _, c := range counts {
		tracked += c.trackedSeen
	}
	// The estimators go into the status once it no longer lists every edge:
	// until then, the listing is all that the next writer needs.
	keep := tb.est.limitReached || tb.notTracked || tracked > len(u.Traffic.Observed)
	var est v1alpha1.EdgeEstimators
	seen := 0
	if keep {
		for _, class := range tb.est.classesOf(counts) {
			c := counts[class]
			if c == nil {
				c = &classCount{}
				counts[class] = c
			}
			est.Classes = append(est.Classes, tb.est.count(class, c))
			seen += c.seen
		}
		est.TrackingLimitReached = tb.est.limitReached
	}
	// Edges that an earlier writer did not list are tracked again as they
	// are seen again; once the estimators count no more than what is
	// tracked, the counts are exact again.
	if tb.notTracked && seen <= tracked {
		tb.notTracked = false
	}
	estimated := tb.est.limitReached || tb.notTracked
	tb.notTrackedEdges = 0
	for class, c := range counts {
		if !estimated {
			c.seen, c.blocked = c.trackedSeen, c.trackedBlocked
		}
		u.Traffic.ObservedEdges += int32(c.seen)
		u.Traffic.WouldBlockEdges += int32(c.blocked)
		u.tracked += c.trackedBlocked
		if c.blocked > 0 {
			u.WouldBlock[class] = c.blocked
		}
		if c.seen > c.trackedSeen {
			u.estimated[class] = true
			tb.notTrackedEdges += c.seen - c.trackedSeen
		}
	}
	u.notTracked = tb.notTrackedEdges
	u.Traffic.Estimated = estimated
	u.Traffic.OmittedEdges = max(0, u.Traffic.ObservedEdges-int32(len(u.Traffic.Observed)))
	if keep {
		u.Traffic.Estimators = &est
	}
}

// addUse adds flows, the newest at last, to rule's use.
func (u *Update) addUse(rule string, flows int64, last time.Time) {
	r := u.Rules[rule]
	r.Flows += flows
	r.Last = maxTime(r.Last, last)
	u.Rules[rule] = r
}

// Written records that the update's status was written at now: its flows are
// the edges' base from then on. It reports whether flows came in since the
// update was made, which then need a write of their own.
func (u *Update) Written(now time.Time) (more bool) {
	s := u.store
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.objects[u.obj]
	if tb == nil {
		return false
	}
	tb.lastWrite = now
	tb.untracked -= u.untracked
	for rule, use := range u.untrackedUse {
		if r, ok := tb.untrackedUse[rule]; ok {
			r.Flows -= min(r.Flows, use.Flows)
			if r.Flows == 0 {
				delete(tb.untrackedUse, rule)
			} else {
				tb.untrackedUse[rule] = r
			}
		}
	}
	more = tb.untracked > 0
	for k, total := range u.totals {
		if e := tb.edges[k]; e != nil {
			e.unwritten -= u.taken[k]
			e.base = total
		}
	}
	// Every edge, not only the update's: one first seen since the update was
	// made has flows of its own to write.
	for _, e := range tb.edges {
		more = more || e.unwritten > 0
	}
	tb.pending = more
	tb.writtenLocked(u.covered)
	tb.recount()
	return more
}

// newestFirst orders edges by when they were last seen, newest first, then
// by peer, protocol and port, so that a listing is stable.
func newestFirst(a, b v1alpha1.ObservedEdge) int {
	return cmp.Or(b.LastSeen.Compare(a.LastSeen.Time),
		strings.Compare(string(a.Peer.Class), string(b.Peer.Class)),
		strings.Compare(a.Peer.Namespace+"/"+a.Peer.Kind+"/"+a.Peer.Name, b.Peer.Namespace+"/"+b.Peer.Kind+"/"+b.Peer.Name),
		strings.Compare(a.Peer.Principal, b.Peer.Principal),
		strings.Compare(a.Peer.Address, b.Peer.Address),
		strings.Compare(a.Peer.DNSName, b.Peer.DNSName),
		strings.Compare(string(a.Protocol), string(b.Protocol)),
		cmp.Compare(a.Port, b.Port))
}

// seconds is t as the API server keeps it, so that a status read back
// compares equal to the one written.
func seconds(t time.Time) metav1.Time {
	return metav1.NewTime(t.UTC().Truncate(time.Second))
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
