package learningprocessor

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// flowKey is what of a flow decides what learning makes of it: the fields
// that learn and what it calls read. The rest (times, counts, source ports,
// labels, workload names that the data plane gives) does not change the
// outcome, so a batch's flows that share a key are decided once. (The data
// plane's workload name does name the workload of a pod that the cache does
// not know, but it is the same for every flow of that pod.)
type flowKey struct {
	provider  flow.Provider
	outcome   flow.Outcome
	transport flow.Transport
	port      uint32
	// policyNamespace and policyName name the policy that namedTarget looks
	// up for a flow that was not allowed; empty for an allowed one, which
	// it never looks up.
	policyNamespace, policyName string
	source, destination         endKey
	// sourceIdentity is the principal of an Istio flow's peer; other data
	// planes' identities are not learned.
	sourceIdentity string
	// names are the DNS names of the ends that have some, which an outside
	// peer is learned by (outside_peers entities): rare, and joined only then.
	names string
}

func keyOf(rec *flow.Record) flowKey {
	k := flowKey{
		provider: rec.Provider, outcome: rec.Outcome, transport: rec.Transport, port: rec.Destination.Port,
		source: endKeyOf(&rec.Source, rec.Time), destination: endKeyOf(&rec.Destination, rec.Time),
	}
	if rec.Outcome != flow.OutcomeAllowed {
		k.policyNamespace, k.policyName = rec.Policy.Namespace, rec.Policy.Name
	}
	if rec.Provider == flow.ProviderIstio {
		k.sourceIdentity = rec.Source.Identity
	}
	if len(rec.Source.Names)+len(rec.Destination.Names) > 0 {
		k.names = strings.Join(rec.Source.Names, flow.LabelSeparator) + "|" + strings.Join(rec.Destination.Names, flow.LabelSeparator)
	}
	return k
}

// decisionKind is what learning did with one side of a flow.
type decisionKind uint8

const (
	decidedCandidate decisionKind = iota
	decidedDrop
	decidedEdge
)

// decision is what learning did with one side of a flow, so that a flow of
// the same key repeats it without asking again.
type decision struct {
	kind decisionKind
	// target and direction are a violation candidate's; direction is
	// also an unattributed side's.
	target    workload.Ref
	direction v1alpha1.Direction
	// drop is the reason a dropped side is counted under.
	drop string
	// unattributed is the workload, as the data plane names it, of a
	// dropped side whose pod the cache did not know: a coverage gap of
	// that workload for each flow.
	unattributed workload.Ref
	// observation is the index, in the memo's observations, of the edge the
	// side's flows are counted on; -1 for none.
	observation int
	// peer is a candidate's peer, as the target's evidence counts it.
	peer learning.Observation
}

// decisions are what learning did with each side of a flow.
type decisions struct {
	sides [2]decision
	n     int
}

// apply does for one flow what d says: a candidate is handed on for each
// flow, as each may be a violation; a learned edge and a dropped side are
// counted, and their observation counts the flow.
func (d *decision) apply(rec *flow.Record, lr plog.LogRecord, sl plog.ScopeLogs, c *counts, m *memo) {
	switch d.kind {
	case decidedCandidate:
		learning.AppendCandidate(sl, lr, d.target, d.direction, &d.peer)
		c.candidates++
	case decidedDrop:
		c.drop(d.drop)
		if d.unattributed.Name != "" {
			m.unattributedFlow(d.unattributed, d.direction, rec, c)
		}
	case decidedEdge:
		c.edges++
	}
	if d.observation >= 0 {
		m.observations[d.observation].count(rec)
	}
}

func candidate(target workload.Ref, d v1alpha1.Direction) decision {
	return decision{kind: decidedCandidate, target: target, direction: d, observation: -1}
}

func dropped(reason string) decision {
	return decision{kind: decidedDrop, drop: reason, observation: -1}
}
