package learningprocessor

import (
	"net/netip"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// memo remembers, for one batch, the answers of the enforcer's cache: a batch's
// flows come from few pods, and asking the cache again for each flow would be
// most of the cost of learning. It remembers too what was decided for each
// flow key (decision.go), so that a flow that repeats one of the batch costs a
// map lookup; the enforcer's answers, the policy that names a target
// included, hold for the batch. It lives for one batch only, so a pod that is
// replaced is seen as soon as the next batch.
type memo struct {
	p *learningProcessor
	// flows holds what was decided for each flow key of the batch.
	flows    map[flowKey]decisions
	ends     map[endKey]resolved
	policies map[policyKey]bool
	// edges finds a learned edge of the batch in observations.
	edges map[learning.Edge]int
	// names finds, by its record, an edge learned for a peer's further DNS
	// name and not yet observed (observe.go).
	names map[learning.Edge]int
	// unlearnedEdges finds an edge that was not learned in observations.
	unlearnedEdges map[unlearnedKey]int
	observations   []observation
	// pods notes which outside peers' addresses are pods' (outside.go).
	pods map[netip.Addr]bool
	// unattributed counts the flows of each workload whose pod the cache
	// did not know (coverage.go).
	unattributed map[unattributedKey]*unattributed
}

type endKey struct {
	external                flow.External
	namespace, pod, address string
	// at is the flow's time, for an end known by its address alone, which
	// resolves to the pod that held the address then; zero for the others,
	// which resolve alike whenever the batch's flows were.
	at int64
}

type resolved struct {
	workload workload.Ref
	reason   workload.Unresolved
}

type policyKey struct {
	workload  workload.Ref
	direction v1alpha1.Direction
}

func newMemo(p *learningProcessor) *memo {
	return &memo{p: p, flows: map[flowKey]decisions{}, ends: map[endKey]resolved{}, policies: map[policyKey]bool{}, edges: map[learning.Edge]int{}}
}

// endKeyOf is what of an end of a flow at time at its resolution reads.
func endKeyOf(e *flow.Endpoint, at time.Time) endKey {
	k := endKey{external: e.External, namespace: e.Namespace, pod: e.Pod, address: e.Address}
	if e.External == "" && e.Pod == "" {
		k.at = at.UnixNano()
	}
	return k
}

func (m *memo) resolve(e *flow.Endpoint, at time.Time) (workload.Ref, workload.Unresolved) {
	k := endKeyOf(e, at)
	if r, ok := m.ends[k]; ok {
		return r.workload, r.reason
	}
	w, reason := flow.ResolveEndpoint(m.p.enforcer, e, at)
	m.ends[k] = resolved{workload: w, reason: reason}
	return w, reason
}

func (m *memo) hasPolicy(w workload.Ref, d v1alpha1.Direction) bool {
	k := policyKey{workload: w, direction: d}
	if has, ok := m.policies[k]; ok {
		return has
	}
	has := m.p.enforcer.HasPolicy(w, d)
	m.policies[k] = has
	return has
}
