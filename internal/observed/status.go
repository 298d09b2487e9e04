package observed

import (
	"cmp"
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
	// WouldBlock counts the edges that the spec would block, by peer class.
	WouldBlock map[v1alpha1.PeerClass]int
	// Rules is, by rule name, the use that the flows not yet written add.
	Rules map[string]Use

	store *Store
	obj   types.NamespacedName
	// taken is the unwritten flows that this update carries, by edge, and
	// totals their flows with them.
	taken, totals map[Key]int64
}

// Status merges what the store holds for obj into cur, the object's observed
// edges as the API server has them: each edge's flows are the status's (or,
// for an edge the status no longer lists, the store's) plus those seen since
// the last write. Every edge is judged again by judge, so a spec edit changes
// the verdicts at once. The newest maxListed edges are listed, newest first;
// the totals count every tracked edge. Call Written once the status is
// written, so that its flows are not counted again.
func (s *Store) Status(obj types.NamespacedName, cur *v1alpha1.ObservedTraffic, judge Judge, maxListed int) *Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	tb := s.table(obj)
	u := &Update{store: s, obj: obj, WouldBlock: map[v1alpha1.PeerClass]int{}, Rules: map[string]Use{},
		taken: map[Key]int64{}, totals: map[Key]int64{}}
	for i := range cur.Observed {
		o := &cur.Observed[i]
		k := KeyOf(o)
		e := tb.edges[k]
		if e == nil {
			// Written by an earlier run or leader: it counts on from there.
			e = &entry{first: o.FirstSeen.Time, last: o.LastSeen.Time}
			tb.edges[k] = e
		}
		e.base = o.Flows
		e.first, e.last = minTime(e.first, o.FirstSeen.Time), maxTime(e.last, o.LastSeen.Time)
	}
	edges := make([]v1alpha1.ObservedEdge, 0, len(tb.edges))
	for k, e := range tb.edges {
		rule, allowed := judge(&k)
		edge := v1alpha1.ObservedEdge{Peer: k.Peer(), Protocol: k.Protocol, Port: k.Port, Flows: e.base + e.unwritten,
			FirstSeen: seconds(e.first), LastSeen: seconds(e.last), Verdict: v1alpha1.VerdictAllowed}
		if !allowed {
			edge.Verdict = v1alpha1.VerdictWouldBlock
			u.WouldBlock[k.Class]++
		}
		if e.unwritten > 0 {
			u.taken[k] = e.unwritten
			if rule != "" {
				r := u.Rules[rule]
				r.Flows += e.unwritten
				r.Last = maxTime(r.Last, e.last)
				u.Rules[rule] = r
			}
		}
		u.totals[k] = edge.Flows
		edges = append(edges, edge)
	}
	slices.SortFunc(edges, newestFirst)
	u.Traffic = v1alpha1.ObservedTraffic{
		ObservedEdges: int32(len(edges)),
		OmittedEdges:  int32(max(0, len(edges)-maxListed)),
	}
	for _, n := range u.WouldBlock {
		u.Traffic.WouldBlockEdges += int32(n)
	}
	if len(edges) > 0 {
		u.Traffic.Observed = edges[:min(len(edges), maxListed)]
	}
	return u
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
