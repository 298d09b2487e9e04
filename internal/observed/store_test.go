package observed

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

var (
	obj    = types.NamespacedName{Namespace: "shop", Name: "deployment-cart-egress"}
	t0     = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	db     = Key{Class: v1alpha1.PeerClassWorkload, Namespace: "data", Kind: "StatefulSet", Name: "postgres", Protocol: corev1.ProtocolTCP, Port: 5432}
	stripe = Key{Class: v1alpha1.PeerClassExternal, Address: "203.0.113.7", Protocol: corev1.ProtocolTCP, Port: 443}
)

// allowWorkloads is a spec that allows workload peers only.
func allowWorkloads(k *Key) (string, bool) {
	if k.Class == v1alpha1.PeerClassWorkload {
		return "egress[0]", true
	}
	return "", false
}

func TestStatusCountsFlowsAcrossWrites(t *testing.T) {
	s := NewStore(10, nil, nil)
	if first, ok := s.Add(obj, &db, 3, t0); !first || !ok {
		t.Fatalf("first add: first %v ok %v", first, ok)
	}
	if first, _ := s.Add(obj, &db, 2, t0.Add(time.Second)); first {
		t.Fatal("a second add before a write asks for another write")
	}
	s.Add(obj, &stripe, 1, t0.Add(2*time.Second))

	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	tr := u.Traffic
	if tr.ObservedEdges != 2 || tr.WouldBlockEdges != 1 || tr.OmittedEdges != 0 || len(tr.Observed) != 2 {
		t.Fatalf("traffic %+v", tr)
	}
	// Newest first: stripe was seen last.
	if got := tr.Observed[0]; got.Peer.Address != "203.0.113.7" || got.Verdict != v1alpha1.VerdictWouldBlock || got.Flows != 1 {
		t.Fatalf("first entry %+v", got)
	}
	if got := tr.Observed[1]; got.Peer.Name != "postgres" || got.Verdict != v1alpha1.VerdictAllowed || got.Flows != 5 ||
		!got.FirstSeen.Equal(&metav1.Time{Time: t0}) || !got.LastSeen.Equal(&metav1.Time{Time: t0.Add(time.Second)}) {
		t.Fatalf("second entry %+v", got)
	}
	if use := u.Rules["egress[0]"]; use.Flows != 5 || !use.Last.Equal(t0.Add(time.Second)) {
		t.Fatalf("rule use %+v", u.Rules)
	}
	if more := u.Written(t0); more {
		t.Fatal("flows left after a write that took them all")
	}

	// The status as written, read back: the next write adds only new flows.
	cur := tr.DeepCopy()
	s.Add(obj, &db, 4, t0.Add(time.Minute))
	u = s.Status(obj, cur, allowWorkloads, 10)
	if got := find(u.Traffic.Observed, "postgres"); got.Flows != 9 {
		t.Fatalf("after a write and 4 more flows: %d flows, want 9", got.Flows)
	}
	if got := find(u.Traffic.Observed, "203.0.113.7"); got.Flows != 1 {
		t.Fatalf("an edge without new flows: %d flows, want 1", got.Flows)
	}
	if len(u.Rules) != 1 || u.Rules["egress[0]"].Flows != 4 {
		t.Fatalf("rule use added by the second write %+v", u.Rules)
	}
}

// TestStatusCarriesOnFromAnEarlierRun: a store that starts (a restart, a new
// leader) counts on from what the status lists.
func TestStatusCarriesOnFromAnEarlierRun(t *testing.T) {
	cur := &v1alpha1.ObservedTraffic{Observed: []v1alpha1.ObservedEdge{{
		Peer: db.Peer(), Protocol: db.Protocol, Port: db.Port, Flows: 100,
		FirstSeen: metav1.NewTime(t0.Add(-time.Hour)), LastSeen: metav1.NewTime(t0.Add(-time.Minute)), Verdict: v1alpha1.VerdictAllowed,
	}}, ObservedEdges: 1}
	s := NewStore(10, nil, nil)
	s.Add(obj, &db, 1, t0)
	u := s.Status(obj, cur, allowWorkloads, 10)
	got := find(u.Traffic.Observed, "postgres")
	if got.Flows != 101 || !got.FirstSeen.Equal(&metav1.Time{Time: t0.Add(-time.Hour)}) || !got.LastSeen.Equal(&metav1.Time{Time: t0}) {
		t.Fatalf("entry %+v", got)
	}
	// A failed write is retried: the same flows are not counted twice.
	u = s.Status(obj, cur, allowWorkloads, 10)
	if got := find(u.Traffic.Observed, "postgres"); got.Flows != 101 {
		t.Fatalf("after a retry: %d flows", got.Flows)
	}
}

// TestStatusJudgesByTheSpecAsItIs: a tighter spec turns allowed edges into
// would-block ones at the next status, with no new flow.
func TestStatusJudgesByTheSpecAsItIs(t *testing.T) {
	s := NewStore(10, nil, nil)
	s.Add(obj, &db, 1, t0)
	s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(t0)
	blockAll := func(*Key) (string, bool) { return "", false }
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, blockAll, 10)
	if u.Traffic.WouldBlockEdges != 1 || u.Traffic.Observed[0].Verdict != v1alpha1.VerdictWouldBlock {
		t.Fatalf("traffic %+v", u.Traffic)
	}
	c := u.WouldBlockCondition(2, nil)
	if c.Status != metav1.ConditionTrue || c.Message != "protect would block 1 observed edge: 1 Workload" || c.ObservedGeneration != 2 {
		t.Fatalf("condition %+v", c)
	}
}

// TestStatusIsBounded: the listing keeps the newest, the totals count all,
// and a new edge beyond the tracking bound is counted, not tracked.
func TestStatusIsBounded(t *testing.T) {
	s := NewStore(5, nil, nil)
	for i := range 7 {
		k := stripe
		k.Port = int32(1000 + i)
		_, ok := s.Add(obj, &k, 1, t0.Add(time.Duration(i)*time.Second))
		if ok != (i < 5) {
			t.Fatalf("edge %d: tracked %v", i, ok)
		}
	}
	if s.Untracked() != 2 || s.Edges() != 5 {
		t.Fatalf("untracked %d, tracked %d", s.Untracked(), s.Edges())
	}
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 3)
	tr := u.Traffic
	// The two edges not tracked still count, through the estimators, which
	// are exact at such counts.
	if len(tr.Observed) != 3 || tr.ObservedEdges != 7 || tr.OmittedEdges != 4 || tr.WouldBlockEdges != 7 || !tr.Estimated {
		t.Fatalf("traffic %+v", tr)
	}
	if tr.Observed[0].Port != 1004 || tr.Observed[2].Port != 1002 {
		t.Fatalf("not newest first: %d, %d", tr.Observed[0].Port, tr.Observed[2].Port)
	}
	if msg := u.WouldBlockCondition(1, nil).Message; msg != "protect would block about 7 observed edges: about 7 External; 5 of them tracked; tracking limit 5 reached" {
		t.Fatalf("message %q", msg)
	}
}

func TestWaitSpacesWrites(t *testing.T) {
	s := NewStore(10, nil, nil)
	if w := s.Wait(obj, time.Minute, t0); w != 0 {
		t.Fatalf("never written: wait %s", w)
	}
	s.Add(obj, &db, 1, t0)
	s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(t0)
	if w := s.Wait(obj, time.Minute, t0.Add(20*time.Second)); w != 40*time.Second {
		t.Fatalf("20s after a write: wait %s, want 40s", w)
	}
	if w := s.Wait(obj, time.Minute, t0.Add(2*time.Minute)); w != 0 {
		t.Fatalf("after the interval: wait %s", w)
	}
}

func TestUnusedRulesCondition(t *testing.T) {
	created := t0.Add(-30 * 24 * time.Hour)
	used := metav1.NewTime(t0.Add(-time.Hour))
	old := metav1.NewTime(t0.Add(-8 * 24 * time.Hour))
	rules := []v1alpha1.RuleUse{{Rule: "ingress[0]", LastUsed: &used}, {Rule: "ingress[1]", LastUsed: &old}, {Rule: "ingress[2]"}}
	c, next := UnusedRulesCondition(rules, created, t0, 7*24*time.Hour, 3)
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonRulesUnused ||
		!strings.Contains(c.Message, "ingress[1] (last used") || !strings.Contains(c.Message, "ingress[2] (never used)") ||
		strings.Contains(c.Message, "ingress[0]") {
		t.Fatalf("condition %+v", c)
	}
	if want := used.Add(7 * 24 * time.Hour); !next.Equal(want) {
		t.Fatalf("next %s, want %s", next, want)
	}
	// A new policy's rules are not unused before the age has passed.
	c, _ = UnusedRulesCondition(rules[2:], t0.Add(-time.Hour), t0, 7*24*time.Hour, 1)
	if c.Status != metav1.ConditionFalse {
		t.Fatalf("a new policy: %+v", c)
	}
}

func find(edges []v1alpha1.ObservedEdge, peer string) v1alpha1.ObservedEdge {
	for _, e := range edges {
		if e.Peer.Name == peer || e.Peer.Address == peer {
			return e
		}
	}
	return v1alpha1.ObservedEdge{}
}

// BenchmarkMemoryPer10kEdges reports the heap that 10,000 tracked edges take
// (100 objects of 100 edges, each a workload peer on its own port).
func BenchmarkMemoryPer10kEdges(b *testing.B) {
	var before, after runtime.MemStats
	var keep *Store
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := NewStore(1000, nil, nil)
		for o := range 100 {
			name := types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("deployment-w%d-egress", o)}
			for e := range 100 {
				k := Key{Class: v1alpha1.PeerClassWorkload, Namespace: fmt.Sprintf("ns%d", e%10), Kind: "Deployment",
					Name: fmt.Sprintf("peer-%d", e), Protocol: corev1.ProtocolTCP, Port: int32(8000 + e)}
				s.Add(name, &k, 1, t0)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		keep = s
	}
	if keep.Edges() != 10_000 {
		b.Fatalf("%d edges", keep.Edges())
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/10k-edges")
}

// TestWrittenSeesEdgesNewSinceTheUpdate: an edge first seen between a
// status and its write has flows of its own, so the write asks for another.
func TestWrittenSeesEdgesNewSinceTheUpdate(t *testing.T) {
	s := NewStore(10, nil, nil)
	s.Add(obj, &db, 1, t0)
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	if first, _ := s.Add(obj, &stripe, 1, t0.Add(time.Second)); first {
		t.Fatal("an add while a write is pending asks for a write of its own")
	}
	if more := u.Written(t0); !more {
		t.Fatal("the write forgot the edge first seen after its status was made")
	}
	if !s.Pending(obj) {
		t.Fatal("the object has unwritten flows but is not pending")
	}
}

func TestHandOffEndsTheSpacing(t *testing.T) {
	s := NewStore(10, nil, nil)
	other := obj
	other.Name = "other"
	s.Add(obj, &db, 1, t0)
	s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(t0)
	s.Add(other, &db, 1, t0)
	s.Status(other, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10).Written(t0)
	s.Add(obj, &db, 2, t0.Add(time.Second)) // unwritten, and spaced
	got := s.HandOff(obj, obj)
	if len(got) != 1 || got[0] != obj {
		t.Fatalf("hand-off keys %v, want only %v (the one with unwritten flows, once)", got, obj)
	}
	if w := s.Wait(obj, time.Minute, t0.Add(2*time.Second)); w != 0 {
		t.Fatalf("after the hand-off: wait %s, want 0", w)
	}
}

// TestChangeSinceTheLastWrite: the store says, for the order of the writes,
// how many edges no write carried yet and how many flows came since the last
// write, beside those it wrote; a write starts them again.
func TestChangeSinceTheLastWrite(t *testing.T) {
	s := NewStore(1, nil, nil)
	if fresh, flows, written := s.Change(obj); fresh != 0 || flows != 0 || written != 0 {
		t.Fatalf("nothing held: change %d, %d, %d", fresh, flows, written)
	}
	s.Add(obj, &db, 3, t0)
	s.Add(obj, &db, 2, t0)
	s.Add(obj, &stripe, 4, t0) // past the tracking limit: flows, not a fresh edge
	if fresh, flows, written := s.Change(obj); fresh != 1 || flows != 9 || written != 0 {
		t.Fatalf("before a write: change %d, %d, %d; want 1 fresh edge, 9 flows, none written", fresh, flows, written)
	}
	u := s.Status(obj, &v1alpha1.ObservedTraffic{}, allowWorkloads, 10)
	u.Written(t0)
	if fresh, flows, written := s.Change(obj); fresh != 0 || flows != 0 || written != 5 {
		t.Fatalf("after a write: change %d, %d, %d; want 5 flows written, nothing new", fresh, flows, written)
	}
	s.Add(obj, &db, 1, t0.Add(time.Second))
	if fresh, flows, written := s.Change(obj); fresh != 0 || flows != 1 || written != 5 {
		t.Fatalf("flows of a written edge: change %d, %d, %d", fresh, flows, written)
	}

	// A new leader's table counts on from the status it merges.
	other := types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
	s.Add(other, &db, 2, t0)
	s.Status(other, &v1alpha1.ObservedTraffic{Observed: []v1alpha1.ObservedEdge{{Peer: db.Peer(), Protocol: db.Protocol,
		Port: db.Port, Flows: 40, FirstSeen: metav1.Time{Time: t0}, LastSeen: metav1.Time{Time: t0}}}}, allowWorkloads, 10)
	if fresh, flows, written := s.Change(other); fresh != 0 || flows != 2 || written != 40 {
		t.Fatalf("after the status is read: change %d, %d, %d; want 2 flows beside 40 written", fresh, flows, written)
	}
}
