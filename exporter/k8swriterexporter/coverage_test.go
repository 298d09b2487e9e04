package k8swriterexporter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// TestGapStoreKeepsWhatAWriteDidNotShow: gaps of one cause add up; a write
// removes what it showed and leaves what came meanwhile; a write that was not
// made leaves everything; gaps older than the window are forgotten.
func TestGapStoreKeepsWhatAWriteDidNotShow(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	name := types.NamespacedName{Namespace: "shop", Name: "deployment-web-ingress"}
	s := newGapStore()
	s.add(name, &learning.Gap{Cause: v1alpha1.CoverageLostEvents, Node: "worker-1", Events: 10, Time: t0})
	s.add(name, &learning.Gap{Cause: v1alpha1.CoverageLostEvents, Node: "worker-2", Events: 5, Time: t0.Add(time.Minute)})
	s.add(name, &learning.Gap{Cause: v1alpha1.CoverageNodeUnreadable, Time: t0.Add(2 * time.Minute)})
	shown := s.take(name)
	if got := gapsText(shown); got != "[LostEvents 2 15 10:00:00 10:01:00 [worker-1 worker-2]] [NodeUnreadable 1 0 10:02:00 10:02:00 [*]]" &&
		got != "[NodeUnreadable 1 0 10:02:00 10:02:00 [*]] [LostEvents 2 15 10:00:00 10:01:00 [worker-1 worker-2]]" {
		t.Fatalf("pending %s", got)
	}
	// One more comes while the write is on its way.
	s.add(name, &learning.Gap{Cause: v1alpha1.CoverageLostEvents, Node: "worker-1", Events: 1, Time: t0.Add(3 * time.Minute)})
	s.written(name, shown)
	if got := gapsText(s.take(name)); got != "[LostEvents 1 1 10:00:00 10:03:00 [worker-2 worker-1]]" {
		t.Fatalf("after the write, pending %s: want the one that came meanwhile", got)
	}
	s.expire(t0.Add(4 * time.Minute))
	if got := s.take(name); len(got) != 0 {
		t.Fatalf("after the window, pending %s", gapsText(got))
	}
}

// TestGapStoreTakesMergedGaps: a gap that a reader merged over its
// aggregation interval counts as the reports it stands for, from the first
// of them, as the same reports one by one do.
func TestGapStoreTakesMergedGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	name := types.NamespacedName{Namespace: "shop", Name: "deployment-web-ingress"}
	merged, single := newGapStore(), newGapStore()
	merged.add(name, &learning.Gap{Cause: v1alpha1.CoverageLostEvents, Node: "worker-1", Events: 30, Reports: 3,
		First: t0, Time: t0.Add(2 * time.Second)})
	for i := range 3 {
		single.add(name, &learning.Gap{Cause: v1alpha1.CoverageLostEvents, Node: "worker-1", Events: 10, Time: t0.Add(time.Duration(i) * time.Second)})
	}
	const want = "[LostEvents 3 30 10:00:00 10:00:02 [worker-1]]"
	if got := gapsText(merged.take(name)); got != want {
		t.Errorf("merged: pending %s, want %s", got, want)
	}
	if got := gapsText(single.take(name)); got != want {
		t.Errorf("one by one: pending %s, want %s", got, want)
	}
}

// TestMergeGapsBoundsNodes: merged gaps keep one entry per cause, in the
// causes' order, their nodes once each, the newest last, at most
// MaxCoverageGapNodes.
func TestMergeGapsBoundsNodes(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	var status []v1alpha1.CoverageGap
	for i := range 20 {
		status = mergeGaps(status, []v1alpha1.CoverageGap{{Cause: v1alpha1.CoverageNodeUnreadable, Reports: 1, First: t0, Last: t0,
			Nodes: []string{fmt.Sprintf("node-%02d", i%18)}}})
	}
	status = mergeGaps(status, []v1alpha1.CoverageGap{{Cause: v1alpha1.CoverageLostEvents, Reports: 1, Events: 3, First: t0, Last: t0, Nodes: []string{"a"}}})
	if len(status) != 2 || status[0].Cause != v1alpha1.CoverageLostEvents || status[1].Reports != 20 {
		t.Fatalf("merged %s", gapsText(status))
	}
	nodes := status[1].Nodes
	if len(nodes) != v1alpha1.MaxCoverageGapNodes || nodes[len(nodes)-1] != "node-01" || nodes[len(nodes)-2] != "node-00" {
		t.Fatalf("nodes %v: want the newest %d, node-00 and node-01 last", nodes, v1alpha1.MaxCoverageGapNodes)
	}
}

// TestCoverageCondition: False with the newest recent gap's cause, every
// recent cause's counts and times, and a look due when the window ends;
// True once every gap is older than the window, and without gaps.
func TestCoverageCondition(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	gaps := []v1alpha1.CoverageGap{
		{Cause: v1alpha1.CoverageLostEvents, Reports: 2, Events: 17, First: at(0), Last: at(time.Minute), Nodes: []string{"worker-2"}},
		{Cause: v1alpha1.CoverageUnattributed, Reports: 1, Events: 4, First: at(2 * time.Minute), Last: at(2 * time.Minute)},
		{Cause: v1alpha1.CoverageNodeUnreadable, Reports: 1, First: at(-2 * time.Hour), Last: at(-2 * time.Hour), Nodes: []string{"*"}},
	}
	c, recheck := coverageCondition(4, gaps, time.Hour, t0.Add(5*time.Minute))
	want := "learning may have missed flows: the data plane lost 17 events on node worker-2 (2 reports, 2026-12-05T10:00:00Z to " +
		"2026-12-05T10:01:00Z); 4 flows named a pod that the enforcer did not know (1 report, 2026-12-05T10:02:00Z); " +
		"covered once no gap is reported for 1h0m0s, at 2026-12-05T11:02:00Z"
	if c.Status != metav1.ConditionFalse || c.Reason != string(v1alpha1.CoverageUnattributed) || c.ObservedGeneration != 4 || c.Message != want {
		t.Errorf("with recent gaps: %+v\nwant message %s", c, want)
	}
	if recheck != 57*time.Minute+time.Second {
		t.Errorf("look again in %s, want when the newest gap leaves the window, a second late", recheck)
	}
	c, recheck = coverageCondition(4, gaps, time.Hour, t0.Add(63*time.Minute))
	if c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonNoGaps || recheck != 0 {
		t.Errorf("after the window: %+v, look again in %s", c, recheck)
	}
	if c, _ = coverageCondition(1, nil, time.Hour, t0); c.Status != metav1.ConditionTrue {
		t.Errorf("without gaps: %+v", c)
	}
	c, _ = coverageCondition(1, gaps[2:], 3*time.Hour, t0)
	if c.Reason != string(v1alpha1.CoverageNodeUnreadable) ||
		c.Message != "learning may have missed flows: the flows of every node could not be read (1 report, 2026-12-05T08:00:00Z); "+
			"covered once no gap is reported for 3h0m0s, at 2026-12-05T11:00:00Z" {
		t.Errorf("a gap of every node: %+v", c)
	}
}

// TestReadyCondition: Ready is True only with Stable, Coverage and
// EvidenceComplete True and WouldBlock False; otherwise its reason is the
// first that is not, and its message names each that is not.
func TestReadyCondition(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: "because " + reason}
	}
	ready := []metav1.Condition{
		cond(v1alpha1.ConditionStable, metav1.ConditionTrue, v1alpha1.ReasonNoNewEdges),
		cond(v1alpha1.ConditionCoverage, metav1.ConditionTrue, v1alpha1.ReasonNoGaps),
		cond(v1alpha1.ConditionEvidenceComplete, metav1.ConditionTrue, v1alpha1.ReasonAllTracked),
		cond(v1alpha1.ConditionWouldBlock, metav1.ConditionFalse, v1alpha1.ReasonObservedAllowed),
	}
	if c := readyCondition(2, ready); c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonReadyToPromote || c.ObservedGeneration != 2 {
		t.Fatalf("all as asked: %+v", c)
	}
	for i, want := range []string{v1alpha1.ReasonNotStable, v1alpha1.ReasonNotCovered, v1alpha1.ReasonEvidenceIncomplete, v1alpha1.ReasonBlocksObserved} {
		conds := make([]metav1.Condition, len(ready))
		copy(conds, ready)
		flip := metav1.ConditionFalse
		if conds[i].Status == metav1.ConditionFalse {
			flip = metav1.ConditionTrue
		}
		conds[i].Status, conds[i].Reason, conds[i].Message = flip, "Flipped", "it flipped"
		c := readyCondition(2, conds)
		if c.Status != metav1.ConditionFalse || c.Reason != want ||
			c.Message != fmt.Sprintf("%s is %s (Flipped: it flipped)", conds[i].Type, flip) {
			t.Errorf("%s flipped: %+v, want reason %s", conds[i].Type, c, want)
		}
	}
	// Two missing: the first names the reason, the message both.
	c := readyCondition(1, ready[2:])
	if c.Reason != v1alpha1.ReasonNotStable || c.Message != "Stable is not known yet; Coverage is not known yet" {
		t.Errorf("Stable and Coverage not set: %+v", c)
	}
	if meta.IsStatusConditionTrue([]metav1.Condition{c}, v1alpha1.ConditionReady) {
		t.Error("Ready without Stable")
	}
}

// gapsText describes gaps for a test's message, with times of day only.
func gapsText(gaps []v1alpha1.CoverageGap) string {
	parts := make([]string, 0, len(gaps))
	for _, g := range gaps {
		parts = append(parts, fmt.Sprintf("[%s %d %d %s %s %v]", g.Cause, g.Reports, g.Events, g.First.UTC().Format(time.TimeOnly),
			g.Last.UTC().Format(time.TimeOnly), g.Nodes))
	}
	return strings.Join(parts, " ")
}

// TestGapReportsWaitLikeCounts: the first gap of a proposal turns Coverage
// False and is written at once; further reports of it (more lost events, a
// later time) change the condition's message alone and wait for the next
// write of the observed edges, observed_interval after the last, where they
// are written; a gap of another cause, which changes the reason, is written
// at once again.
func TestGapReportsWaitLikeCounts(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080)
	fake.Drain()
	gap := func(cause v1alpha1.CoverageGapCause, events int64, at time.Time) {
		t.Helper()
		ld := plog.NewLogs()
		g := learning.Gap{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
			Cause: cause, Node: "worker-1", Events: events, Time: at}
		g.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
		if err := w.ConsumeLogs(context.Background(), ld); err != nil {
			t.Fatal(err)
		}
	}
	coverage := func() *metav1.Condition {
		t.Helper()
		got := fake.Proposals()
		if len(got) != 1 {
			t.Fatalf("proposals %+v", got)
		}
		return meta.FindStatusCondition(got[0].Status.Conditions, v1alpha1.ConditionCoverage)
	}
	statuses := fake.Writes["status"]

	t0 := time.Now()
	gap(v1alpha1.CoverageLostEvents, 10, t0)
	fake.Drain()
	if fake.Writes["status"] != statuses+1 || coverage().Status != metav1.ConditionFalse {
		t.Fatalf("a first gap: %d status writes after %d, Coverage %+v; want it written at once", fake.Writes["status"], statuses, coverage())
	}
	shown := coverage().Message

	gap(v1alpha1.CoverageLostEvents, 5, t0)
	fake.Drain()
	if fake.Writes["status"] != statuses+1 || coverage().Message != shown {
		t.Fatalf("a further report: %d status writes, Coverage %q; want none until observed_interval", fake.Writes["status"]-statuses, coverage().Message)
	}
	if d, ok := fake.Queued()[cartIngress]; !ok || d <= writeInterval || d > w.cfg.ObservedInterval {
		t.Fatalf("queued %v: want the proposal again within observed_interval (%s)", fake.Queued(), w.cfg.ObservedInterval)
	}

	// Coverage's reason is the newest gap's cause: this one is reported a
	// second after the others (a time of the record, not a wait).
	gap(v1alpha1.CoverageNodeUnreadable, 0, t0.Add(time.Second))
	fake.Drain()
	if fake.Writes["status"] != statuses+2 || coverage().Reason != string(v1alpha1.CoverageNodeUnreadable) ||
		!strings.Contains(coverage().Message, "15 events") {
		t.Fatalf("a gap of another cause: %d status writes, Coverage %+v; want it and the report that waited written at once",
			fake.Writes["status"]-statuses, coverage())
	}
}
