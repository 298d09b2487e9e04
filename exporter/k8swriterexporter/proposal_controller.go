package k8swriterexporter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
)

// proposalWatches are what asks the proposal writer's controller for a
// reconcile besides its own queue: a person's edit of a proposal's spec, which
// changes the verdicts on its observed edges, judged again at once. Its own
// status writes do not change the generation, and ask for nothing.
var proposalWatches = []termwriter.Watch{{
	Object:     &v1alpha1.WorkloadNetworkPolicyProposal{},
	Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}},
}, {
	// A change of a policy's spec (an edit, a rollback, a merged amendment)
	// leaves its amendment built on a generation that is gone: the writer
	// builds it again on the policy as it is, from what it learned.
	Object:     &v1alpha1.WorkloadNetworkPolicy{},
	Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}},
	Handler: handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: AmendmentName(o.GetName())}}}
	}),
}}

// errWorkloadGone: the workload no longer exists; its proposal goes with it.
var errWorkloadGone = errors.New("workload gone")

// reconcile brings one proposal up to what was learned: it creates it, or adds
// the new peers and ports to it. The spec it writes is the union of what the
// proposal holds and what was learned, so nothing learned before (by an earlier
// run or another leader) is lost; when the union is what the proposal holds,
// nothing is written.
func (w *writer) reconcile(ctx context.Context, key proposalKey, l *learned, pw termwriter.ProposalWriter) error {
	if key.amends != "" {
		return w.reconcileAmendment(ctx, key, l, pw)
	}
	if w.enforcer.HasPolicy(key.workload, key.direction) {
		return nil // a policy governs it: what is learned for it goes into its amendment
	}
	podSelector, uid, ok := w.enforcer.Selector(ctx, key.workload)
	if !ok {
		return errWorkloadGone
	}
	if l.backend == v1alpha1.BackendIstio && len(podSelector.MatchLabels) == 0 {
		// An AuthorizationPolicy selects by labels only; without them it would
		// apply to every workload of the namespace.
		w.set.Logger.Warn("No Istio proposal for a workload whose selector has no matchLabels",
			zap.String("workload", key.workload.String()))
		return nil
	}
	learnedRules := w.learnedRules(ctx, l.peers)
	name := ProposalName(key.workload, key.direction)
	target := v1alpha1.TargetRef{Kind: key.workload.Kind, Name: key.workload.Name}
	nn := types.NamespacedName{Namespace: key.workload.Namespace, Name: name}
	if len(learnedRules) == 0 {
		return w.reconcileObserved(ctx, nn, pw)
	}
	maxPeers, maxPorts := w.cfg.MaxPeers, w.cfg.MaxPortsPerPeer

	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var existing v1alpha1.WorkloadNetworkPolicyProposal
		err := pw.Get(ctx, nn, &existing)
		if apierrors.IsNotFound(err) {
			rs, b := bounded(l.backend, rules{}, learnedRules, maxPeers, maxPorts)
			p := &v1alpha1.WorkloadNetworkPolicyProposal{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: nn.Namespace,
					Labels:          map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedBy},
					OwnerReferences: []metav1.OwnerReference{ownerRef(key.workload.Kind, key.workload.Name, uid)},
				},
				Spec: specOf(l.backend, target, key.direction, podSelector, rs),
			}
			if w.agg.wasRefused(key, &p.Spec, "") {
				return nil // refused as it is: nothing new to try
			}
			if err := w.write(ctx, pw, p, func() error { return pw.Create(ctx, p) }, "create"); err != nil {
				// A refused create leaves no proposal to carry a condition:
				// the WriteRefused Event says it.
				return w.refused(key, p.Spec, nil, nil, err)
			}
			w.agg.refuse(key, nil)
			return w.writeStatus(ctx, pw, p, w.newEdge(p, nil, l.peers), boundedCondition(b, l.backend, maxPeers, maxPorts), writtenCondition(nil))
		}
		if err != nil {
			return err
		}
		if !managed(&existing) || !ownedBy(&existing, uid) || existing.Spec.Backend != l.backend {
			// Made by someone else, for an earlier workload of that name, or for
			// another data plane: not the writer's to change.
			w.set.Logger.Debug("Leaving a proposal that is not the writer's to change",
				zap.String("namespace", nn.Namespace), zap.String("name", name))
			return nil
		}
		rs, b := bounded(existing.Spec.Backend, rulesOf(&existing.Spec), learnedRules, maxPeers, maxPorts)
		spec := specOf(existing.Spec.Backend, target, key.direction, podSelector, rs)
		bc := boundedCondition(b, existing.Spec.Backend, maxPeers, maxPorts)
		if apiequality.Semantic.DeepEqual(spec, existing.Spec) {
			// What was learned is written; the status may not say so yet (a
			// proposal of an earlier version, a status write that failed).
			return w.writeStatus(ctx, pw, &existing, nil, bc, writtenCondition(nil))
		}
		if w.agg.wasRefused(key, &spec, existing.ResourceVersion) {
			return nil // refused as it is: nothing new to try
		}
		held := existing.DeepCopy()
		existing.Spec = spec
		if err := w.write(ctx, pw, &existing, func() error { return pw.Update(ctx, &existing) }, "update"); err != nil {
			return w.refused(key, spec, held, func() error {
				return w.writeStatus(ctx, pw, held, nil, writtenCondition(err))
			}, err)
		}
		w.agg.refuse(key, nil)
		return w.writeStatus(ctx, pw, &existing, w.newEdge(&existing, &held.Spec, l.peers), bc, writtenCondition(nil))
	})
}

// learnedRules are the rules that allow the learned edges: a workload peer
// by its selector (none for a peer that is gone), any other by what it is.
func (w *writer) learnedRules(ctx context.Context, peers edgeSet) rules {
	rs := rules{}
	for peer, ports := range peers {
		if peer.cidr != "" {
			rs.add(ipBlockRule(peer.cidr, ports))
			continue
		}
		if peer.entity != "" || peer.dnsName != "" {
			rs.add(outsideRule(peer.entity, peer.dnsName, ports))
			continue
		}
		r := &rule{principal: peer.principal, ports: clonePorts(ports)}
		if peer.principal == "" {
			sel, _, ok := w.enforcer.Selector(ctx, peer.workload)
			if !ok {
				continue // the peer is gone: nothing to allow
			}
			r.namespace, r.selector = peer.workload.Namespace, sel
		}
		rs.add(r)
	}
	return rs
}

// reconcileObserved writes the observed edges of a proposal that has nothing
// new learned: flows of edges it has, edges its peers' rules leave out, or
// verdicts that a spec edit changed.
func (w *writer) reconcileObserved(ctx context.Context, nn types.NamespacedName, pw termwriter.ProposalWriter) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var existing v1alpha1.WorkloadNetworkPolicyProposal
		if err := pw.Get(ctx, nn, &existing); err != nil {
			// None yet: its observed edges wait for the first learned one.
			return client.IgnoreNotFound(err)
		}
		if !managed(&existing) {
			return nil
		}
		return w.writeStatus(ctx, pw, &existing, nil)
	})
}

// managed reports whether the writer made p, and so may change it.
func managed(p *v1alpha1.WorkloadNetworkPolicyProposal) bool {
	return p.Labels[v1alpha1.ManagedByLabel] == v1alpha1.ManagedBy
}

// refused handles a failed write of spec onto held, the proposal as it is
// (nil when it does not exist): when the API server refused it for what it
// holds, the writer says so on the proposal (report, when it exists),
// remembers the write with the proposal's resourceVersion after that, and
// returns nil, so that the same write is not retried until the proposal or
// what was learned changes. Any other error is returned, to be retried.
func (w *writer) refused(key proposalKey, spec v1alpha1.PolicySpec, held *v1alpha1.WorkloadNetworkPolicyProposal,
	report func() error, err error) error {
	if !apiwrite.IsRefused(err) {
		return err
	}
	w.set.Logger.Warn("The API server refused a proposal; it is tried again when something new is learned for it",
		zap.String("proposal", nameOf(key).String()), zap.Error(err))
	var rerr error
	if report != nil {
		rerr = report()
	}
	r := &refusal{spec: spec}
	if held != nil {
		r.resourceVersion = held.ResourceVersion
	}
	w.agg.refuse(key, r)
	return rerr
}

// write waits for the rate limiter, then writes and counts. A write that the
// API server refuses for what it holds is recorded as an Event on the proposal.
func (w *writer) write(ctx context.Context, pw termwriter.ProposalWriter, p *v1alpha1.WorkloadNetworkPolicyProposal,
	do func() error, op string) error {
	if err := w.limiter.Wait(ctx); err != nil {
		return err
	}
	err := do()
	w.telemetry.wrote(ctx, op, err)
	if apiwrite.IsRefused(err) {
		pw.Event(p, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused, fmt.Sprintf("the proposal could not be written (%s): %v", op, err))
	}
	return err
}

// writeStatus sets the conditions on p, its observed edges and, when the
// write of its spec learned an edge (learned), its last new edge, and writes
// its status when that changes it. Observed edges alone are written at most
// once per observed_interval: their flow counts change with every flow. A
// condition of the writer's that changes its status or reason, or a spec
// that the status does not describe yet (a person's edit changes the
// verdicts), is written at once; a new message alone (a gap's counts) waits
// as the counts do. A
// status write that the API server refuses is logged and not retried: the
// next write of the proposal tries again.
func (w *writer) writeStatus(ctx context.Context, pw termwriter.ProposalWriter, p *v1alpha1.WorkloadNetworkPolicyProposal,
	learned *v1alpha1.NewEdge, conditions ...metav1.Condition) error {
	st := p.Status.DeepCopy()
	urgent := p.Generation != st.ObservedGeneration
	if learned != nil {
		st.LastNewEdge, urgent = learned, true
	}
	name := client.ObjectKeyFromObject(p)
	now := time.Now()
	stable, recheck := stableCondition(p, st.LastNewEdge, w.cfg.StableAfter, now)
	gaps := w.gaps.take(name)
	st.CoverageGaps = mergeGaps(st.CoverageGaps, gaps)
	coverage, coverageRecheck := coverageCondition(p.Generation, st.CoverageGaps, w.cfg.StableAfter, now)
	conditions = append(conditions, stable, coverage)
	for _, c := range conditions {
		urgent = transition(st.Conditions, c) || urgent
		meta.SetStatusCondition(&st.Conditions, c)
	}
	for _, after := range []time.Duration{recheck, coverageRecheck} {
		if after > 0 {
			w.enqueue(name, after, priorityRecheck)
		}
	}
	st.ObservedGeneration = p.Generation
	u := w.observed.Status(name, &st.ObservedTraffic, w.judge(p), w.cfg.MaxObserved)
	if u.Err != nil {
		w.set.Logger.Warn("A proposal's estimators of observed edges could not be read; its counts start again from what it lists",
			zap.String("proposal", name.String()), zap.Error(u.Err))
	}
	st.ObservedTraffic = u.Traffic
	meta.SetStatusCondition(&st.Conditions, u.WouldBlockCondition(p.Generation, netpolmatch.WhyBlocked(&p.Spec, w.enforcer.DataPlane())))
	meta.SetStatusCondition(&st.Conditions, u.EvidenceCompleteCondition(p.Generation))
	meta.SetStatusCondition(&st.Conditions, readyCondition(p.Generation, st.Conditions))
	if apiequality.Semantic.DeepEqual(st, &p.Status) {
		return nil
	}
	if !urgent {
		if wait := w.observed.Wait(name, w.cfg.ObservedInterval, time.Now()); wait > 0 {
			w.enqueueRefresh(name, wait)
			return nil
		}
	}
	if err := w.limiter.Wait(ctx); err != nil {
		return err
	}
	held := p.Status
	p.Status = *st
	err := pw.UpdateStatus(ctx, p)
	w.telemetry.wrote(ctx, "status", err)
	switch {
	case err == nil:
		w.gaps.written(name, gaps)
		if u.Written(time.Now()) {
			w.enqueueRefresh(name, w.cfg.ObservedInterval)
		}
		return nil
	case apiwrite.IsRefused(err):
		p.Status = held
		w.set.Logger.Warn("The API server refused a proposal's status",
			zap.String("proposal", name.String()), zap.Error(err))
		return nil
	}
	p.Status = held
	return err
}

// maxConditionMessage bounds the API server's answer that a condition repeats.
const maxConditionMessage = 1024

// transition reports whether setting c on conds changes what the condition
// says (its status, reason or generation), not only its message: a further
// report of a gap that the status shows already (one more node's lost events,
// a later time) changes Coverage's message alone, and waits for the next
// write of the observed edges, as their counts do; a status written for every
// such report would follow the data plane's reports, not what a user acts on.
func transition(conds []metav1.Condition, c metav1.Condition) bool {
	was := meta.FindStatusCondition(conds, c.Type)
	return was == nil || was.Status != c.Status || was.Reason != c.Reason || was.ObservedGeneration != c.ObservedGeneration
}

// truncate cuts msg to at most n bytes, marking the cut.
func truncate(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	return msg[:n-3] + "..."
}

// writtenCondition is the Written condition after a write that err ended.
func writtenCondition(err error) metav1.Condition {
	if err == nil {
		return metav1.Condition{Type: v1alpha1.ConditionWritten, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonAccepted,
			Message: "the API server took the last write of what was learned"}
	}
	msg := truncate("the API server refused the last write of what was learned: "+err.Error(), maxConditionMessage)
	return metav1.Condition{Type: v1alpha1.ConditionWritten, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRefused, Message: msg}
}

// boundedCondition is the Bounded condition of a proposal that bounded left
// as b says.
func boundedCondition(b bounds, backend v1alpha1.Backend, maxPeers, maxPorts int) metav1.Condition {
	if b.collapsed == 0 && b.leftOut == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionBounded, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWithinBounds,
			Message: fmt.Sprintf("every learned peer and port is listed (at most %d peers, %d ports each)", maxPeers, maxPorts)}
	}
	var parts []string
	if b.collapsed > 0 {
		into := "ranges"
		if backend == v1alpha1.BackendIstio {
			into = "any port"
		}
		parts = append(parts, fmt.Sprintf("%d %s ports collapsed into %s (over %d ports)", b.collapsed, plural(b.collapsed, "peer's", "peers'"), into, maxPorts))
	}
	if b.leftOut > 0 {
		parts = append(parts, fmt.Sprintf("%d %s left out (over %d peers)", b.leftOut, plural(b.leftOut, "peer", "peers"), maxPeers))
	}
	return metav1.Condition{Type: v1alpha1.ConditionBounded, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonOverLimits,
		Message: strings.Join(parts, "; ")}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ownerRef points a proposal at its workload, so that the garbage collector
// deletes it with the workload. It blocks nothing: blocking the owner's deletion
// would need the right to update the workload's finalizers.
func ownerRef(kind v1alpha1.WorkloadKind, name string, uid types.UID) metav1.OwnerReference {
	apiVersion := "apps/v1"
	if kind == v1alpha1.WorkloadKindJob || kind == v1alpha1.WorkloadKindCronJob {
		apiVersion = "batch/v1"
	}
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: string(kind), Name: name, UID: uid, Controller: ptr.To(false)}
}

func ownedBy(p client.Object, uid types.UID) bool {
	for _, o := range p.GetOwnerReferences() {
		if o.UID == uid {
			return true
		}
	}
	return false
}
