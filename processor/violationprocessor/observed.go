package violationprocessor

import (
	"time"

	"go.uber.org/zap"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// observeEdge notes a flow of pol's workload and direction, allowed or not,
// on its observed edge k, for the store to count with the rest of the batch
// (addBatch): the policy's first since its last status write asks for the
// next, at most once per observed_interval.
func observeEdge(m *memo, pol *v1alpha1.WorkloadNetworkPolicy, k *observed.Key, rec *flow.Record) {
	t := rec.Time
	if t.IsZero() {
		t = time.Now()
	}
	m.seen = append(m.seen, observed.Seen{Obj: policyName(pol), Key: *k, Flows: max(rec.Count, 1), Time: t})
}

// judge judges pol's observed edges by its spec as it is now.
func (p *violationProcessor) judge(pol *v1alpha1.WorkloadNetworkPolicy) observed.Judge {
	return observed.JudgeSpec(p.enforcer, &pol.Spec.PolicySpec, pol.Namespace, p.enforcer.DataPlane())
}

// judgeCached judges the edges of policy name by its spec in the cache: for
// those past the tracking limit that come before the policy's first status
// sync of this run. Nil when the cache has no such policy: nothing allows
// them.
func (p *violationProcessor) judgeCached(name types.NamespacedName) observed.Judge {
	if p.enforcer == nil {
		return nil
	}
	pol, ok := p.enforcer.Policy(name)
	if !ok {
		return nil
	}
	return p.judge(pol)
}

// observedStatus is a policy's observed part of the status as a sync would
// write it: the observed edges, the rules' use, the WouldBlock and
// UnusedRules conditions.
type observedStatus struct {
	update *observed.Update
	// next is when a rule next turns unused, zero for never.
	next time.Time
}

// setObserved sets the observed part of st, fresh's status to be. It leaves
// st as fresh has it when nothing asks for a write now: what changed is only
// the flows or edges, the policy's last such write was less than
// observed_interval ago, and the spec the verdicts judge is unchanged. The
// caller asks for a sync at wait then. withViolations says that st has new
// violation records: when the policy holds readers' batches that no status
// counts yet, they are written too, so that the status's countedBatches
// name the batches of those violations.
func (p *violationProcessor) setObserved(fresh *v1alpha1.WorkloadNetworkPolicy, st *v1alpha1.WorkloadNetworkPolicyStatus,
	now time.Time, withViolations bool) (o observedStatus, wait time.Duration) {
	if !p.cfg.Observe {
		return o, 0
	}
	key := types.NamespacedName{Namespace: fresh.Namespace, Name: fresh.Name}
	held := st.DeepCopy()
	judged := meta.FindStatusCondition(held.Conditions, v1alpha1.ConditionWouldBlock)
	if from := fresh.Labels[v1alpha1.PromotedFromLabel]; judged == nil && from != "" {
		// The policy's first observed edges: the proposal's, which stays
		// until this status carries them on.
		if proposal, ok := p.enforcer.Proposal(types.NamespacedName{Namespace: fresh.Namespace, Name: from}); ok {
			st.ObservedTraffic = *proposal.Status.ObservedTraffic.DeepCopy()
		}
	}
	o.update = p.observed.Status(key, &st.ObservedTraffic, p.judge(fresh), p.cfg.MaxObserved)
	if o.update.Err != nil {
		p.logger.Warn("A policy's estimators of observed edges could not be read; its counts start again from what it lists",
			zap.String("policy", key.String()), zap.Error(o.update.Err))
	}
	st.ObservedTraffic = o.update.Traffic
	st.RuleUse = o.update.MergeRuleUse(st.RuleUse, netpolmatch.Rules(&fresh.Spec.PolicySpec))
	setCondition(st, o.update.WouldBlockCondition(fresh.Generation, netpolmatch.WhyBlocked(&fresh.Spec.PolicySpec, p.enforcer.DataPlane())))
	setCondition(st, o.update.EvidenceCompleteCondition(fresh.Generation))
	var unused metav1.Condition
	unused, o.next = observed.UnusedRulesCondition(st.RuleUse, v1alpha1.PromotedAt(fresh), now, p.cfg.UnusedRuleAge, fresh.Generation)
	setCondition(st, unused)

	specEdited := judged == nil || judged.ObservedGeneration != fresh.Generation
	if specEdited || conditionChanged(held, st, v1alpha1.ConditionUnusedRules) || (withViolations && p.observed.HoldsBatches(key)) {
		return o, 0
	}
	if wait = p.observed.Wait(key, p.cfg.ObservedInterval, now); wait > 0 {
		// Not yet: keep what the status has, and the flows for later.
		*st = *held
		o.update = nil
	}
	return o, wait
}

// conditionChanged reports whether condition t differs between two statuses
// in what it says.
func conditionChanged(a, b *v1alpha1.WorkloadNetworkPolicyStatus, t string) bool {
	ca, cb := meta.FindStatusCondition(a.Conditions, t), meta.FindStatusCondition(b.Conditions, t)
	if ca == nil || cb == nil {
		return ca != cb
	}
	return ca.Status != cb.Status || ca.Reason != cb.Reason || ca.Message != cb.Message
}

// written records that o's status was written, and asks for the next sync:
// for flows that came in meanwhile, or when a rule turns unused.
func (p *violationProcessor) written(key types.NamespacedName, o *observedStatus, wait time.Duration, now time.Time) {
	switch {
	case o.update == nil && wait > 0:
		p.status.Enqueue(key, wait)
	case o.update != nil && o.update.Written(now):
		p.status.Enqueue(key, p.cfg.ObservedInterval)
	}
	if !o.next.IsZero() {
		p.status.Enqueue(key, o.next.Sub(now)+time.Second)
	}
}
