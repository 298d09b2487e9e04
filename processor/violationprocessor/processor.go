package violationprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// enforcer is what the violation processor asks of the enforcer extension: to
// resolve flows' ends, and to read policies.
type enforcer interface {
	enforcerextension.WrittenMarks
	workload.Resolver
	workload.Labeler
	workload.Revisions
	Policies(w workload.Ref, direction v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)
	Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool)
	DataPlane() netpolmatch.DataPlane
}

// violationProcessor turns violation candidates into observations: it sends
// each at once as a policy_violation_observed event, and buffers it for the
// status sync, which the leader runs every status sync interval. Its output is
// the events only: learning events and flows stay in the pipeline that feeds it.
type violationProcessor struct {
	cfg      *Config
	logger   *zap.Logger
	next     consumer.Logs
	enforcer enforcer
	// status asks the status owner's controller for a policy's sync.
	status termwriter.Queue
	// find finds what runs the status owner's controller (termwriter.Find).
	find   termwriter.Finder
	buffer *buffer
	// observed holds the policies' observed edges between status writes.
	observed  *observed.Store
	telemetry *telemetry
	// reported holds the unknown acknowledge annotations already logged.
	reported sync.Map
	// batchMu makes a batch's records, in the buffer and in observed, and a
	// status write's take of both, one step each: a status that says it
	// counts a batch (countedBatches) holds all of the batch's violations
	// and observed edges of its policy.
	batchMu sync.Mutex
	// id names this processor's written-through marks in the membership.
	id string
}

func newViolationProcessor(set processor.Settings, cfg *Config, next consumer.Logs, find termwriter.Finder) (*violationProcessor, error) {
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, err
	}
	p := &violationProcessor{cfg: cfg, logger: set.Logger, next: next, buffer: newBuffer(cfg.MaxBuffered), telemetry: tel, find: find,
		id: set.ID.String()}
	p.observed = observed.NewStore(cfg.MaxTrackedEdges, p.judgeCached, p.countedOf)
	if err := p.observed.RegisterMetrics(tel.observedEdges, tel.base); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *violationProcessor) start(_ context.Context, host component.Host) error {
	e, err := enforcerextension.Find[enforcer](host, p.cfg.Enforcer)
	if err != nil {
		return err
	}
	writing, err := p.find(host, p.cfg.Enforcer, p.cfg.LeaderElector, p.logger)
	if err != nil {
		return err
	}
	p.enforcer = e
	p.status = writing.SyncPolicyStatus(p.statusWatches(), p.reconcileStatus)
	if p.cfg.Observe {
		// The readers keep each batch they sent until the leader's Lease
		// says that the statuses that count it are written.
		e.PublishWritten(p.id, p.publishWritten())
	}
	return nil
}

// shutdown ends the status owner's controller. On a leader's way out, every
// buffered record and observed flow is written first, at once, so that the
// next leader resumes after them; the receivers have stopped, and the lease is
// still held.
func (p *violationProcessor) shutdown(ctx context.Context) error {
	if p.status != nil {
		if err := p.status.Stop(ctx, p.observed.HandOff(p.buffer.held()...)); err != nil {
			p.logger.Warn("Could not write every policy status before the lease is given up: the next leader reads the flow source's backfill", zap.Error(err))
		}
	}
	if p.enforcer != nil {
		p.enforcer.PublishWritten(p.id, nil)
	}
	p.telemetry.shutdown()
	return nil
}

func (p *violationProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	taken := flowsource.WasTaken(ld)
	if taken && !p.cfg.Observe {
		// Without observed edges no status says which batches it counts:
		// what the leader that took the batch reported stays its own.
		return ld, processorhelper.ErrSkipProcessingData
	}
	out := plog.NewLogs()
	sl := out.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	var c counts
	m := &memo{policies: map[policyKey][]v1alpha1.WorkloadNetworkPolicy{}, selectors: netpolmatch.SelectorCache{},
		batch: batchOf(ld), taken: taken}
	// The batch's candidates go in under batchMu, taken at the first one: a
	// batch of learned records only (most of them) does not wait for it.
	locked := false
	defer func() {
		if locked {
			p.batchMu.Unlock()
		}
	}()
	var rec flow.Record // one for the batch, as in the learning processor
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		target, direction, ok := learning.ReadCandidate(lr)
		if !ok {
			return
		}
		if !locked {
			p.batchMu.Lock()
			locked = true
		}
		rec.ReadFrom(lr)
		cand := candidate{rec: &rec, target: target, direction: direction}
		if peer, hasPeer := learning.ReadCandidatePeer(lr); hasPeer {
			cand.peer = &peer
		}
		o, reason := p.observe(&cand, m)
		switch reason {
		case "":
		case reasonAmbiguous:
			c.unattributed++
			return
		default:
			c.dismiss(reason)
			return
		}
		c.observe(string(o.key.Action))
		if !m.taken {
			appendObserved(sl, &o)
		}
		if o.amendment != nil {
			m.amendments.add(o.amendment)
		}
		ok, first := p.buffer.add(&o)
		switch {
		case !ok:
			c.dropped += o.count
		case first:
			p.status.Enqueue(o.policy, p.cfg.StatusSyncInterval)
		}
	})
	p.addBatch(m)
	m.amendments.appendTo(sl)
	p.telemetry.record(ctx, &c)
	if sl.LogRecords().Len() == 0 {
		return out, processorhelper.ErrSkipProcessingData
	}
	return out, nil
}

// memo keeps, for one batch, the policies of each target and direction and the
// converted selectors: a batch's candidates concern few policies.
type memo struct {
	policies  map[policyKey][]v1alpha1.WorkloadNetworkPolicy
	selectors netpolmatch.SelectorCache
	// amendments are the batch's amendment edges, each once.
	amendments amendments
	// batch names the batch, zero for records of no sender's batch; taken
	// says that a leader took it before, and reported its violations.
	batch observed.Batch
	taken bool
	// counted says, per policy, whether its status counts the batch
	// already (countedAlready).
	counted map[types.NamespacedName]bool
	// seen are the batch's observed edges, added to the store at its end.
	seen []observed.Seen
}

type policyKey struct {
	target    workload.Ref
	direction v1alpha1.Direction
}

func (p *violationProcessor) policiesOf(m *memo, c *candidate) []v1alpha1.WorkloadNetworkPolicy {
	k := policyKey{target: c.target, direction: c.direction}
	policies, ok := m.policies[k]
	if !ok {
		policies = p.enforcer.Policies(c.target, c.direction)
		m.policies[k] = policies
	}
	return policies
}

// observe judges a candidate: the observation it is, or why it is none.
func (p *violationProcessor) observe(c *candidate, m *memo) (observation, string) {
	if !c.judgedHere() {
		return observation{}, reasonOtherSide
	}
	proto, ok := observed.ProtocolOf(string(c.rec.Transport))
	if !ok {
		return observation{}, reasonProtocol
	}
	pol, reason := owner(c, p.policiesOf(m, c))
	if reason != "" {
		return observation{}, reason
	}
	if p.countedAlready(m, policyName(pol)) {
		return observation{}, reasonCounted
	}
	targetEnd, otherEnd := &c.rec.Destination, &c.rec.Source
	if c.direction == v1alpha1.DirectionEgress {
		targetEnd, otherEnd = otherEnd, targetEnd
	}
	otherView, edge := other(p.enforcer, otherEnd, c.rec.Time)
	if c.peer != nil {
		// The key that learning gave the peer: the proposal's evidence
		// counted the edge under it, and the policy's goes on from there.
		edge, _ = c.peer.Key()
	}
	port := int32(c.rec.Destination.Port)
	edge.Protocol, edge.Port = proto, port
	_, allowed := observed.MatchKey(p.enforcer, &pol.Spec.PolicySpec, pol.Namespace, p.enforcer.DataPlane(), &edge, m.selectors)
	if p.cfg.Observe {
		observeEdge(m, pol, &edge, c.rec)
	}
	action, ok := actionOf(c, pol, allowed)
	if !ok {
		return observation{}, reasonAllowed
	}
	o := observation{
		policy:   policyName(pol),
		provider: c.rec.Provider,
		time:     c.rec.Time,
		count:    max(c.rec.Count, 1),
		key: recordKey{
			Protocol: proto, DstPort: port, Action: action,
			Policy: v1alpha1.PolicyReference{Namespace: pol.Namespace, Name: pol.Name},
		},
	}
	if o.time.IsZero() {
		o.time = time.Now()
	}
	o.key.Source, o.key.Destination = named(otherView, &edge), target(c.target, targetEnd)
	o.key.Destination.Revision = p.revision(targetEnd, c.rec.Time)
	if o.key.Source.Class == v1alpha1.PeerClassWorkload {
		o.key.Source.Revision = p.revision(otherEnd, c.rec.Time)
	}
	if p.cfg.Amend && c.peer != nil && c.peer.Learnable() && !acknowledged(pol, &o.key) {
		o.amendment = &learning.Amendment{Observation: *c.peer, Policy: pol.Name,
			TargetRevision: o.key.Destination.Revision, PeerRevision: o.key.Source.Revision}
		o.amendment.Flows, o.amendment.Time = o.count, o.time
		// The candidate names the peer; the edge is the policy's.
		o.amendment.Workload, o.amendment.Direction, o.amendment.Backend = c.target, c.direction, pol.Spec.Backend
	}
	if c.direction == v1alpha1.DirectionEgress {
		o.key.Source, o.key.Destination = o.key.Destination, o.key.Source
	}
	return o, ""
}
