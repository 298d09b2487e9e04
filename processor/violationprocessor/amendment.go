package violationprocessor

import (
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// Learning goes on under every policy: each violation that is not
// acknowledged, whose peer a spec can name, is an edge of the policy's
// amendment (learning.Amendment), which the writer learns as it learns a
// proposal. A monitor violation is an edge that the spec does not allow; a
// protect one a connection that the data plane refused. The judge that
// decides a violation decides the amendment: one verdict, two views.

// amendmentKey is an amendment edge of one policy, the revisions that made
// it included: a batch sends each once, with its flows added up.
type amendmentKey struct {
	policy                       string
	target                       workload.Ref
	direction                    v1alpha1.Direction
	edge                         learning.Edge
	targetRevision, peerRevision string
	class                        v1alpha1.PeerClass
	peerAddress, peerDNSName     string
}

// amendments are a batch's amendment edges.
type amendments struct {
	order []*learning.Amendment
	index map[amendmentKey]*learning.Amendment
}

// add takes one amendment edge, adding up the flows of a repeat.
func (as *amendments) add(am *learning.Amendment) {
	k := amendmentKey{policy: am.Policy, target: am.Workload, direction: am.Direction, edge: am.Edge,
		targetRevision: am.TargetRevision, peerRevision: am.PeerRevision, class: am.Class,
		peerAddress: am.PeerAddress, peerDNSName: am.PeerDNSName}
	if as.index == nil {
		as.index = map[amendmentKey]*learning.Amendment{}
	}
	if held, ok := as.index[k]; ok {
		held.Flows += am.Flows
		if am.Time.After(held.Time) {
			held.Time = am.Time
		}
		return
	}
	as.index[k] = am
	as.order = append(as.order, am)
}

// appendTo appends the batch's amendment edges to sl, in the order first seen.
func (as *amendments) appendTo(sl plog.ScopeLogs) {
	for _, am := range as.order {
		am.AppendTo(sl)
	}
}

// acknowledged reports whether a person acknowledged a violation of key
// (the revisions of its ends included: a later release that makes the same
// edge is new evidence): an acknowledged violation is not learned into the
// amendment.
func acknowledged(p *v1alpha1.WorkloadNetworkPolicy, k *recordKey) bool {
	for i := range p.Status.AcknowledgedViolations {
		if keyOf(&p.Status.AcknowledgedViolations[i].Violation) == *k {
			return true
		}
	}
	return false
}

// revision is the revision of the pod at end at the flow's time, "" when it
// is none (flow.EndpointRevision).
func (p *violationProcessor) revision(end *flow.Endpoint, at time.Time) string {
	if r, ok := flow.EndpointRevision(p.enforcer, end, at); ok {
		return r.Name
	}
	return ""
}
