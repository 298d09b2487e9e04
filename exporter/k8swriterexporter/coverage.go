package k8swriterexporter

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// everyNode is how a coverage gap names a gap of every node: the data plane
// named none.
const everyNode = "*"

// gapStore holds the coverage gaps of each proposal that its status does not
// show yet. A status write takes what it shows (pending) and, once the API
// server took it, removes it (written); gaps that came meanwhile stay for the
// next write. A proposal that does not exist yet keeps its gaps until it is
// made, and gaps older than the window are forgotten: they no longer make a
// proposal not covered.
type gapStore struct {
	mu      sync.Mutex
	pending map[types.NamespacedName]map[v1alpha1.CoverageGapCause]*v1alpha1.CoverageGap
}

func newGapStore() *gapStore {
	return &gapStore{pending: map[types.NamespacedName]map[v1alpha1.CoverageGapCause]*v1alpha1.CoverageGap{}}
}

// add notes g for the proposal name.
func (s *gapStore) add(name types.NamespacedName, g *learning.Gap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byCause := s.pending[name]
	if byCause == nil {
		byCause = map[v1alpha1.CoverageGapCause]*v1alpha1.CoverageGap{}
		s.pending[name] = byCause
	}
	// A reader merges the gaps of its aggregation interval: one record may
	// stand for several reports, the first of them earlier than its time.
	first := metav1.NewTime(g.FirstTime().UTC().Truncate(time.Second))
	at := metav1.NewTime(g.Time.UTC().Truncate(time.Second))
	have := byCause[g.Cause]
	if have == nil {
		have = &v1alpha1.CoverageGap{Cause: g.Cause, First: first, Last: at}
		byCause[g.Cause] = have
	}
	one := v1alpha1.CoverageGap{Cause: g.Cause, Reports: g.ReportCount(), Events: g.Events, First: first, Last: at}
	if g.Cause != v1alpha1.CoverageUnattributed {
		one.Nodes = []string{nodeOf(g.Node)}
	}
	mergeGap(have, &one)
}

func nodeOf(node string) string {
	if node == "" {
		return everyNode
	}
	return node
}

// take returns a copy of the gaps of name that its status does not show.
func (s *gapStore) take(name types.NamespacedName) []v1alpha1.CoverageGap {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []v1alpha1.CoverageGap
	for _, g := range s.pending[name] {
		out = append(out, *g.DeepCopy())
	}
	return out
}

// written removes from name's pending gaps those that a status write showed.
func (s *gapStore) written(name types.NamespacedName, shown []v1alpha1.CoverageGap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byCause := s.pending[name]
	for _, g := range shown {
		have := byCause[g.Cause]
		if have == nil {
			continue
		}
		have.Reports -= g.Reports
		have.Events = max(0, have.Events-g.Events)
		if have.Reports <= 0 {
			delete(byCause, g.Cause)
		}
	}
	if len(byCause) == 0 {
		delete(s.pending, name)
	}
}

// expire forgets the pending gaps last reported before cutoff: a proposal
// made after that is covered whatever they said.
func (s *gapStore) expire(cutoff time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, byCause := range s.pending {
		for cause, g := range byCause {
			if g.Last.Time.Before(cutoff) {
				delete(byCause, cause)
			}
		}
		if len(byCause) == 0 {
			delete(s.pending, name)
		}
	}
}

// mergeGap adds the gaps of add to into, of the same cause: their counts,
// the earlier first, the later last and their nodes, the newest last.
func mergeGap(into, add *v1alpha1.CoverageGap) {
	into.Reports += add.Reports
	into.Events += add.Events
	if add.First.Before(&into.First) {
		into.First = add.First
	}
	if into.Last.Before(&add.Last) {
		into.Last = add.Last
	}
	for _, n := range add.Nodes {
		into.Nodes = slices.DeleteFunc(into.Nodes, func(have string) bool { return have == n })
		into.Nodes = append(into.Nodes, n)
	}
	if over := len(into.Nodes) - v1alpha1.MaxCoverageGapNodes; over > 0 {
		into.Nodes = slices.Delete(into.Nodes, 0, over)
	}
}

// mergeGaps returns the gaps of status with pending added, by cause, in the
// causes' order.
func mergeGaps(status, pending []v1alpha1.CoverageGap) []v1alpha1.CoverageGap {
	if len(pending) == 0 {
		return status
	}
	out := make([]v1alpha1.CoverageGap, 0, len(status)+len(pending))
	for _, g := range status {
		out = append(out, *g.DeepCopy())
	}
	for i := range pending {
		j := slices.IndexFunc(out, func(g v1alpha1.CoverageGap) bool { return g.Cause == pending[i].Cause })
		if j < 0 {
			out = append(out, *pending[i].DeepCopy())
			continue
		}
		mergeGap(&out[j], &pending[i])
	}
	slices.SortFunc(out, func(a, b v1alpha1.CoverageGap) int { return causeOrder(a.Cause) - causeOrder(b.Cause) })
	return out
}

// causeOrder orders the causes as the condition's message names them.
func causeOrder(c v1alpha1.CoverageGapCause) int {
	switch c {
	case v1alpha1.CoverageLostEvents:
		return 0
	case v1alpha1.CoverageNodeUnreadable:
		return 1
	case v1alpha1.CoverageUnattributed:
		return 2
	}
	return 3
}

// coverageCondition is the Coverage condition of a proposal with gaps at now:
// False while the newest gap is more recent than window, its reason that
// gap's cause and its message every recent cause's counts and times; True
// once none is. recheck is how long until a False one turns True, when no
// gap comes meanwhile.
func coverageCondition(generation int64, gaps []v1alpha1.CoverageGap, window time.Duration, now time.Time) (c metav1.Condition, recheck time.Duration) {
	c = metav1.Condition{Type: v1alpha1.ConditionCoverage, ObservedGeneration: generation}
	var newest *v1alpha1.CoverageGap
	var recent []string
	for i := range gaps {
		g := &gaps[i]
		if g.Last.Add(window).After(now) {
			recent = append(recent, gapText(g))
			if newest == nil || newest.Last.Before(&g.Last) {
				newest = g
			}
		}
	}
	if newest == nil {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha1.ReasonNoGaps,
			fmt.Sprintf("no gap in the flows was reported within %s", window)
		return c, 0
	}
	until := newest.Last.Add(window)
	c.Status, c.Reason = metav1.ConditionFalse, string(newest.Cause)
	c.Message = fmt.Sprintf("learning may have missed flows: %s; covered once no gap is reported for %s, at %s",
		strings.Join(recent, "; "), window, until.UTC().Format(time.RFC3339))
	return c, until.Sub(now) + time.Second
}

// gapText says what the gaps of one cause were.
func gapText(g *v1alpha1.CoverageGap) string {
	var what string
	switch g.Cause {
	case v1alpha1.CoverageLostEvents:
		what = "the data plane lost events"
		if g.Events > 0 {
			what = fmt.Sprintf("the data plane lost %d events", g.Events)
		}
		what += " on " + nodesText(g.Nodes)
	case v1alpha1.CoverageNodeUnreadable:
		what = "the flows of " + nodesText(g.Nodes) + " could not be read"
	default:
		what = fmt.Sprintf("%d flows named a pod that the enforcer did not know", g.Events)
	}
	when := g.Last.UTC().Format(time.RFC3339)
	if !g.First.Equal(&g.Last) {
		when = g.First.UTC().Format(time.RFC3339) + " to " + when
	}
	return fmt.Sprintf("%s (%d %s, %s)", what, g.Reports, plural(int(g.Reports), "report", "reports"), when)
}

func nodesText(nodes []string) string {
	if slices.Contains(nodes, everyNode) {
		return "every node"
	}
	return plural(len(nodes), "node", "nodes") + " " + strings.Join(nodes, ", ")
}
