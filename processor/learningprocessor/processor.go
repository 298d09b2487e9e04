package learningprocessor

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// enforcer is what the learning processor asks of the enforcer extension: to
// resolve flows' ends, and whether a policy governs a workload.
type enforcer interface {
	workload.Resolver
	enforcerextension.Placement
	HasPolicy(w workload.Ref, direction v1alpha1.Direction) bool
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)
}

// learningProcessor turns flow records into learned edges and violation
// candidates. It keeps no state: the enforcer's cache answers every question.
type learningProcessor struct {
	cfg       *Config
	enforcer  enforcer
	telemetry *telemetry
	// decideEachFlow decides every flow afresh, as before flows were
	// remembered by their key: the tests hold the memo to its output.
	decideEachFlow bool
}

func newLearningProcessor(set processor.Settings, cfg *Config) (*learningProcessor, error) {
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, err
	}
	return &learningProcessor{cfg: cfg, telemetry: tel}, nil
}

func (p *learningProcessor) start(_ context.Context, host component.Host) error {
	e, err := enforcerextension.Find[enforcer](host, p.cfg.Enforcer)
	if err != nil {
		return err
	}
	p.enforcer = e
	return nil
}

// side is one end of a flow seen as the target of a policy: the end, the
// direction of the flow from it, and the end at the other side.
type side struct {
	target, peer *flow.Endpoint
	direction    v1alpha1.Direction
}

// sides are the ends whose policies a flow concerns. ztunnel enforces inbound
// only, and names the source by its principal: Istio learns the destination's
// ingress. Calico and Cilium enforce both ways: the source's egress and the
// destination's ingress. A connection that both ends report gives the same
// edges twice, which the writer's aggregation keeps once.
func sides(rec *flow.Record) ([2]side, int) {
	ingress := side{target: &rec.Destination, peer: &rec.Source, direction: v1alpha1.DirectionIngress}
	if rec.Provider == flow.ProviderIstio {
		return [2]side{ingress}, 1
	}
	return [2]side{{target: &rec.Source, peer: &rec.Destination, direction: v1alpha1.DirectionEgress}, ingress}, 2
}

// backendOf is the backend of what is learned from provider p's flows.
func (p *learningProcessor) backendOf(provider flow.Provider) v1alpha1.Backend {
	switch provider {
	case flow.ProviderIstio:
		return v1alpha1.BackendIstio
	case flow.ProviderCilium:
		return p.cfg.CiliumBackend
	default:
		return v1alpha1.BackendKubernetes
	}
}

func (p *learningProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	out, c := p.learnBatch(ld)
	p.telemetry.record(ctx, &c)
	if out.LogRecordCount() == 0 {
		return out, processorhelper.ErrSkipProcessingData
	}
	return out, nil
}

// learnBatch learns from a batch: it returns what to hand on and the counts.
func (p *learningProcessor) learnBatch(ld plog.Logs) (plog.Logs, counts) {
	out := plog.NewLogs()
	sl := out.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	var c counts
	m := newMemo(p)
	var rec flow.Record // one for the batch: a record per flow would be an allocation per flow
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		switch lr.EventName() {
		case flow.EventName:
		case flow.GapEventName:
			p.gap(lr, sl, &c)
			return
		default:
			lr.CopyTo(sl.LogRecords().AppendEmpty()) // not ours to judge
			return
		}
		rec.ReadSkippingLabels(lr) // learning has no use for the pod labels
		p.learn(&rec, lr, sl, &c, m)
	})
	if p.cfg.Observe {
		m.flushObservations(sl, time.Now())
	}
	m.flushUnattributed(sl)
	return out, c
}

// learn emits, for each side of the flow, a learned edge, or a violation
// candidate when a policy governs that side, or counts why it does neither. A
// flow whose key the batch has seen repeats what was decided for it.
func (p *learningProcessor) learn(rec *flow.Record, lr plog.LogRecord, sl plog.ScopeLogs, c *counts, m *memo) {
	k := keyOf(rec)
	if d, ok := m.flows[k]; ok {
		for i := range d.n {
			d.sides[i].apply(rec, lr, sl, c, m)
		}
		return
	}
	var d decisions
	all, n := sides(rec)
	for i, s := range all[:n] {
		// Each side is applied before the next is decided, so that the
		// records handed on keep their order.
		d.sides[i] = p.decide(rec, s, sl, m)
		d.sides[i].apply(rec, lr, sl, c, m)
	}
	d.n = n
	if !p.decideEachFlow {
		m.flows[k] = d
	}
}

// decide decides what learning makes of one side of a flow: a violation
// candidate when a policy governs the target, a learned edge (handed on the
// first time the batch sees it), or a reason to drop it.
func (p *learningProcessor) decide(rec *flow.Record, s side, sl plog.ScopeLogs, m *memo) decision {
	target, reason := m.resolve(s.target, rec.Time)
	if reason != "" {
		if ref, ok := p.namedTarget(rec, s.direction); ok {
			return p.candidateOf(rec, s, ref, m)
		}
		d := dropped("target_" + string(reason))
		if reason.Unattributed() {
			// A pod the cache does not know (yet, or any more), or
			// cannot tell by its address: its workload's learning
			// misses the flow.
			d.unattributed, d.direction = flow.NamedWorkload(s.target), s.direction
		}
		return d
	}
	if m.hasPolicy(target, s.direction) {
		return p.candidateOf(rec, s, target, m)
	}
	if rec.Outcome != flow.OutcomeAllowed {
		return dropped(reasonNotAllowed) // another policy decided it; nothing to learn
	}
	if rec.Destination.Port == 0 {
		return dropped(reasonNoPort)
	}
	sp := p.peerOf(rec, s, target, m)
	if sp.drop != "" {
		return p.leftOut(sp.edge, s.peer, sp.reason, rec.Time, m, sp.drop)
	}
	// Each further name of the peer is learned too, without evidence of
	// its own: the data plane gives every name that the address has, and
	// the workload may have looked up any of them.
	for _, name := range sp.names {
		other := sp.edge
		other.PeerName = name
		m.learnedName(&other, sl)
	}
	return decision{kind: decidedEdge, observation: m.learned(&sp.edge, sp.class, sl)}
}

// sidePeer is how learning takes the peer of a flow side: the edge with its
// peer, or why it leaves the peer out.
type sidePeer struct {
	edge  learning.Edge
	class v1alpha1.PeerClass
	// names are the peer's further DNS names, learned too.
	names []string
	// reason is why the peer did not resolve to a workload.
	reason workload.Unresolved
	// drop is why the peer is left out; empty when it is learned.
	drop string
}

// peerOf works out the peer of side s of target's edge: a workload, an
// Istio principal, or an outside peer as outside_peers says. It hands
// nothing on: a learned edge and a violation candidate name their peer
// alike through it.
func (p *learningProcessor) peerOf(rec *flow.Record, s side, target workload.Ref, m *memo) sidePeer {
	sp := sidePeer{class: v1alpha1.PeerClassWorkload, edge: learning.Edge{
		Backend: p.backendOf(rec.Provider), Workload: target, Direction: s.direction,
		Protocol: string(rec.Transport), Port: rec.Destination.Port,
	}}
	istio := sp.edge.Backend == v1alpha1.BackendIstio
	var peer workload.Ref
	if !istio || s.peer.Identity == "" {
		peer, sp.reason = m.resolve(s.peer, rec.Time)
	}
	if istio && s.peer.Identity == "" || !istio && sp.reason != "" {
		sp.names, sp.drop = p.outside(&sp.edge, s.peer, sp.reason, rec.Provider, m)
		if sp.drop != "" {
			return sp
		}
		sp.class = observed.ClassOf(sp.reason)
	}
	if istio {
		sp.edge.Principal = s.peer.Identity
	} else {
		sp.edge.Peer = peer
	}
	return sp
}

// candidateOf is a violation candidate of target for side s, with its peer
// as target's evidence counts it: as learning would learn it, or leave it
// out.
func (p *learningProcessor) candidateOf(rec *flow.Record, s side, target workload.Ref, m *memo) decision {
	d := candidate(target, s.direction)
	sp := p.peerOf(rec, s, target, m)
	if sp.drop != "" {
		d.peer, _ = m.unlearnedObservation(sp.edge, s.peer, sp.reason, rec.Time)
	} else {
		d.peer = learning.Observation{Edge: sp.edge, Class: sp.class}
	}
	return d
}

// leftOut drops a flow side whose peer learning leaves out for drop, and
// observes it, so that the proposal shows it as an edge that protect would
// block.
func (p *learningProcessor) leftOut(edge learning.Edge, peer *flow.Endpoint, reason workload.Unresolved, at time.Time, m *memo, drop string) decision {
	d := dropped(drop)
	if reason.Unattributed() && edge.Backend != v1alpha1.BackendIstio {
		// A pod that could not be told: the target's learning misses the
		// edge. (An Istio source without an identity is outside the mesh:
		// the evidence shows it as an edge that protect would block.)
		d.unattributed, d.direction = edge.Workload, edge.Direction
	}
	if p.cfg.Observe {
		d.observation = m.unlearned(edge, peer, reason, at)
	}
	return d
}

// namedTarget finds the target of a flow whose target end is unknown through
// the policy that decided it, when that is a WorkloadNetworkPolicy's native
// object (it has the policy's name) for this direction. ztunnel's decision
// lines name the AuthorizationPolicy but not the destination, which only a
// joined access line gives; without one, the named policy still says whose
// violation it is.
func (p *learningProcessor) namedTarget(rec *flow.Record, d v1alpha1.Direction) (workload.Ref, bool) {
	if rec.Outcome == flow.OutcomeAllowed || rec.Policy.Namespace == "" || rec.Policy.Name == "" {
		return workload.Ref{}, false
	}
	pol, ok := p.enforcer.Policy(types.NamespacedName{Namespace: rec.Policy.Namespace, Name: rec.Policy.Name})
	if !ok || pol.Spec.Direction != d {
		return workload.Ref{}, false
	}
	return workload.Target(pol.Namespace, pol.Spec.TargetRef), true
}
