package k8swriterexporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// writeInterval is how long a proposal's first unwritten edge waits for its
// write: the edges of a burst of new flows go out together, one write per
// proposal.
const writeInterval = time.Second

// enforcer is what the proposal writer asks of the enforcer extension: to read
// workloads, policies and proposals from the cache.
type enforcer interface {
	enforcerextension.Selectors
	workload.Labeler
	HasPolicy(w workload.Ref, direction v1alpha1.Direction) bool
	Policies(w workload.Ref, direction v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)
	Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool)
	// Revision reads a workload revision that an amendment edge names.
	Revision(namespace, name string) (workload.Revision, bool)
	DataPlane() netpolmatch.DataPlane
	enforcerextension.WrittenMarks
}

// writer is the exporter: it aggregates learned edges in memory and, while this
// replica leads, writes the proposals whose content changed.
type writer struct {
	cfg      *Config
	set      exporter.Settings
	enforcer enforcer
	queue    termwriter.Queue
	// find finds what runs the writer's controller (termwriter.Find).
	find      termwriter.Finder
	agg       *aggregate
	observed  *observed.Store
	gaps      *gapStore
	limiter   waiter
	telemetry *telemetry
	// asked is the priority that each key waits at in queue.
	asked asked
	// stopSilent ends the look for silent senders (watchSilent), once.
	stopSilent     chan struct{}
	silentDone     chan struct{}
	stopSilentOnce sync.Once
}

func newWriter(set exporter.Settings, cfg *Config, find termwriter.Finder) (*writer, error) {
	w := &writer{
		cfg: cfg, set: set, agg: newAggregate(), gaps: newGapStore(), find: find,
		limiter: rate.NewLimiter(rate.Limit(cfg.WriteQPS), cfg.WriteBurst),
	}
	w.observed = observed.NewStore(cfg.MaxTrackedEdges, w.judgeCached, w.countedCached)
	tel, err := newTelemetry(set, w.agg.unwritten, w.observed)
	if err != nil {
		return nil, err
	}
	w.telemetry = tel
	return w, nil
}

// Start finds the enforcer and runs the writer's controller on each term of
// leadership.
func (w *writer) Start(_ context.Context, host component.Host) error {
	e, err := enforcerextension.Find[enforcer](host, w.cfg.Enforcer)
	if err != nil {
		return err
	}
	writing, err := w.find(host, w.cfg.Enforcer, w.cfg.LeaderElector, w.set.Logger)
	if err != nil {
		return err
	}
	w.enforcer = e
	// The readers keep each batch they sent until the leader's Lease says
	// that it is written.
	e.PublishWritten(w.set.ID.String(), func() map[string]int64 { return w.observed.WrittenThrough(time.Now()) })
	w.queue = writing.WriteProposals(proposalWatches, w.reconcileKey, func(enqueue func(types.NamespacedName)) {
		// A new leader checks every proposal it knows of, since the previous
		// one may have stopped mid-way.
		for _, name := range w.agg.markAllDirty() {
			enqueue(name)
		}
	})
	w.stopSilent, w.silentDone = make(chan struct{}), make(chan struct{})
	go w.watchSilent()
	return nil
}

// stopWatchingSilent ends watchSilent, if it runs, and returns once it
// ended.
func (w *writer) stopWatchingSilent() {
	if w.stopSilent == nil {
		return
	}
	w.stopSilentOnce.Do(func() {
		close(w.stopSilent)
		<-w.silentDone
	})
}

// silentLook is how often the writer looks for senders gone silent.
const silentLook = time.Second

// watchSilent asks, every silentLook, for the writes of the proposals that
// hold unwritten records of a sender gone silent, until Shutdown.
func (w *writer) watchSilent() {
	defer close(w.silentDone)
	wait.Until(func() { w.writeSilent(time.Now()) }, silentLook, w.stopSilent)
}

// writeSilent asks at once, and before the evidence refreshes, for the
// writes of the proposals that hold unwritten records of a sender that went
// silent at now: most likely a reader that died, whose records the leader
// alone holds until they are written (observed.Store.HeldBySilent).
func (w *writer) writeSilent(now time.Time) {
	for _, name := range w.observed.HeldBySilent(now) {
		w.enqueue(name, 0, prioritySilent)
	}
}

// Shutdown ends the writer's controller. On a leader's way out, what is
// learned and observed is written first, at once, so that the next leader
// resumes after it; the receivers have stopped, and the lease is still held.
func (w *writer) Shutdown(ctx context.Context) error {
	w.stopWatchingSilent()
	if w.queue != nil {
		if err := w.queue.Stop(ctx, w.observed.HandOff(w.agg.dirtyNames()...)); err != nil {
			w.set.Logger.Warn("Could not write every proposal before the lease is given up: the next leader reads the flow source's backfill", zap.Error(err))
		}
	}
	if w.enforcer != nil {
		w.enforcer.PublishWritten(w.set.ID.String(), nil)
	}
	w.telemetry.shutdown()
	return nil
}

// ConsumeLogs takes learned edges, observations and coverage gaps; other records are not the
// writer's. The first new edge of a proposal asks for its write one
// writeInterval later, so that a burst of new edges goes out in one write;
// the first observation since a status write asks for the next, which comes
// at most once per observed_interval. A reader's batch (a resource that names
// it) is counted once per proposal: one sent again after a leader change is
// skipped where the counts include it.
func (w *writer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	var o learning.Observation
	var am learning.Amendment
	var g learning.Gap
	gaps := false
	now := time.Now()
	var seen []observed.Seen
	for _, rl := range ld.ResourceLogs().All() {
		seen = seen[:0]
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if g.ReadFrom(lr) {
					w.addGap(&g)
					gaps = true
					continue
				}
				if am.ReadFrom(lr) {
					if r, ok := w.readAmendment(&am); ok {
						seen = append(seen, r)
					}
					continue
				}
				if r, ok := w.read(&o, lr); ok {
					seen = append(seen, r)
				}
			}
		}
		var b observed.Batch
		b.Sender, b.Seq, _ = flowsource.BatchOf(rl.Resource())
		if len(seen) == 0 && b.Sender == "" {
			continue
		}
		// A reader's batch with none of the writer's records is noted all the
		// same: its written-through mark goes past it, so that the reader
		// does not keep it (the violation processor's candidates) for the
		// writer's sake.
		first, skipped := w.observed.AddBatch(b, seen, now)
		for _, name := range first {
			w.enqueueRefresh(name, max(writeInterval, w.observed.Wait(name, w.cfg.ObservedInterval, now)))
		}
		// The others wait already: their priority rises with what changed.
		for i := range seen {
			if i > 0 && seen[i].Obj == seen[i-1].Obj {
				continue
			}
			w.raiseRefresh(seen[i].Obj, now)
		}
		if skipped > 0 {
			w.telemetry.skippedAgain(ctx, skipped)
		}
	}
	if gaps {
		// Once a batch, not once a gap: a node's gap is one record per
		// workload on it.
		w.gaps.expire(now.Add(-w.cfg.StableAfter))
	}
	return nil
}

// addGap notes a coverage gap of a workload on its proposal of the gap's
// direction, or on each of its proposals for a gap of both (the ingress one
// alone for istio, which learns no egress), and asks for their status writes.
func (w *writer) addGap(g *learning.Gap) {
	for _, d := range []v1alpha1.Direction{v1alpha1.DirectionIngress, v1alpha1.DirectionEgress} {
		if g.Direction != "" && d != g.Direction || d == v1alpha1.DirectionEgress && g.Backend == v1alpha1.BackendIstio {
			continue
		}
		for _, name := range w.learningNames(g.Workload, d) {
			w.gaps.add(name, g)
			w.enqueue(name, writeInterval, priorityGap)
		}
	}
}

// learningNames are the proposals whose learning a gap of workload wl in
// direction d concerns: its proposal, or once a policy governs it, that
// policy's amendment.
func (w *writer) learningNames(wl workload.Ref, d v1alpha1.Direction) []types.NamespacedName {
	var names []types.NamespacedName
	if w.enforcer != nil {
		for _, pol := range w.enforcer.Policies(wl, d) {
			names = append(names, nameOf(proposalKey{workload: wl, direction: d, amends: pol.Name}))
		}
	}
	if len(names) == 0 {
		names = append(names, nameOf(proposalKey{workload: wl, direction: d}))
	}
	return names
}

// read takes one record: a learned edge goes into the aggregate at once, an
// observation is returned for the store.
func (w *writer) read(o *learning.Observation, lr plog.LogRecord) (observed.Seen, bool) {
	learned, observedToo := o.ReadFrom(lr)
	var name types.NamespacedName
	if learned {
		var dirty bool
		if name, dirty = w.agg.add(&o.Edge); dirty {
			w.enqueueSpec(name)
		}
	}
	if !observedToo {
		return observed.Seen{}, false
	}
	k, ok := observedKey(o)
	if !ok {
		return observed.Seen{}, false
	}
	if !learned {
		name = nameOf(proposalKey{workload: o.Workload, direction: o.Direction})
	}
	return observed.Seen{Obj: name, Key: k, Flows: o.Flows, Time: o.Time}, true
}

// readAmendment takes an amendment edge into the aggregate, and returns its
// observation for the amendment's observed edges: its evidence, which the
// amendment's spec judges.
func (w *writer) readAmendment(am *learning.Amendment) (observed.Seen, bool) {
	name, dirty := w.agg.addAmendment(am)
	if dirty {
		w.enqueueSpec(name)
	}
	k, ok := am.Key()
	if !ok {
		return observed.Seen{}, false
	}
	return observed.Seen{Obj: name, Key: k, Flows: am.Flows, Time: am.Time}, true
}

// notWritten tells the store, after a reconcile of name that asked for no
// other write of it, that what it took is not waiting for one: a reconcile
// that left the proposal as it is (no proposal yet, a policy governs it, a
// refusal) must not hold the readers' kept batches back.
func (w *writer) notWritten(name types.NamespacedName) {
	if _, queued := w.asked.queued(name); !queued {
		w.observed.NotWritten(name)
	}
}

// reconcileKey writes one proposal, as its controller asks. A failure marks it
// dirty again and returns the error, which retries it with backoff.
func (w *writer) reconcileKey(ctx context.Context, name types.NamespacedName, pw termwriter.ProposalWriter) error {
	w.asked.taken(name)
	// Before the learned edges are taken: a batch that comes after has
	// edges that this write does not take.
	w.observed.Hold(name)
	key, l, ok := w.agg.take(name)
	if !ok {
		// Nothing learned here: its observed edges, or a spec edit's verdicts.
		err := w.reconcileObserved(ctx, name, pw)
		if err == nil {
			w.notWritten(name)
		}
		return err
	}
	defer w.agg.written(key)
	err := w.reconcile(ctx, key, l, pw)
	switch {
	case err == nil:
		if !w.agg.isRefused(key) {
			w.agg.settle(key, l)
		}
		w.notWritten(name)
	case errors.Is(err, errWorkloadGone):
		w.agg.forget(key)
		w.observed.Forget(name)
		return nil
	default:
		w.agg.markDirty(key)
		if ctx.Err() == nil {
			w.set.Logger.Warn("Could not write a proposal; retrying",
				zap.String("proposal", fmt.Sprintf("%s/%s", name.Namespace, name.Name)), zap.Error(err))
		}
	}
	return err
}
