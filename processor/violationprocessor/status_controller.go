package violationprocessor

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// statusWatches are what asks the status controller for a policy's sync
// besides its own queue: every policy that is created or deleted or whose spec
// or annotations (an acknowledgement) change, and with it the policies that
// share its target and direction, since whether a target is shared is in their
// status too. Its own status writes change neither, and ask for nothing.
func (p *violationProcessor) statusWatches() []termwriter.Watch {
	return []termwriter.Watch{{
		Object:  &v1alpha1.WorkloadNetworkPolicy{},
		Handler: handler.EnqueueRequestsFromMapFunc(p.policiesSharingTarget),
		Predicates: []predicate.Predicate{predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})},
	}}
}

// policiesSharingTarget maps a policy to itself and to the policies that share
// its target and direction.
func (p *violationProcessor) policiesSharingTarget(_ context.Context, o client.Object) []reconcile.Request {
	pol, ok := o.(*v1alpha1.WorkloadNetworkPolicy)
	if !ok {
		return nil
	}
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(pol)}}
	for _, other := range p.enforcer.Policies(workload.Target(pol.Namespace, pol.Spec.TargetRef), pol.Spec.Direction) {
		if other.Name != pol.Name {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)})
		}
	}
	return reqs
}

// reconcileStatus is the status sync of one policy, the owner of its
// violation records, acknowledgements and the Attributable and Acknowledged
// conditions. The enforcer runs it on the leader, as a controller: for a
// policy with buffered records one status sync interval after its first
// record, and at once for a policy that is created or whose annotations (an
// acknowledgement) or spec change. A standby keeps buffering what reaches it,
// bounded, for when it leads.
func (p *violationProcessor) reconcileStatus(ctx context.Context, key types.NamespacedName, w termwriter.PolicyStatusWriter) error {
	pol, ok := p.enforcer.Policy(key)
	if !ok {
		// Gone: nothing to write the records to.
		p.forget(ctx, key, nil)
		return nil
	}
	var others []string
	for _, o := range p.enforcer.Policies(workload.Target(pol.Namespace, pol.Spec.TargetRef), pol.Spec.Direction) {
		if o.Name != pol.Name {
			others = append(others, o.Name)
		}
	}
	var acks acknowledgements
	var obs observedStatus
	var wait time.Duration
	now := time.Now()
	wrote := false
	var records map[recordKey]*pending
	written, err := w.UpdateStatus(ctx, key, func(fresh *v1alpha1.WorkloadNetworkPolicy) bool {
		// The buffer's records and the observed edges as of one moment
		// between two batches (batchMu), with what a try before a conflict
		// took: the status's countedBatches then name only batches whose
		// violations it holds.
		p.batchMu.Lock()
		defer p.batchMu.Unlock()
		records = joinRecords(records, p.buffer.take(key))
		st := fresh.Status.DeepCopy()
		merge(st, records)
		acks = acknowledge(st, fresh.Annotations, now)
		setAttributable(fresh, st, others)
		setAcknowledged(fresh, st, acks.unknown)
		obs, wait = p.setObserved(fresh, st, now, len(records) > 0)
		if apiequality.Semantic.DeepEqual(st, &fresh.Status) {
			wrote = false
			return false
		}
		fresh.Status, wrote = *st, true
		return true
	})
	if wrote {
		p.telemetry.statusWrite(ctx, err)
	}
	if err == nil {
		if !wrote {
			obs.update = nil
		}
		p.written(key, &obs, wait, now)
	}
	switch {
	case apierrors.IsNotFound(err):
		p.forget(ctx, key, records)
		return nil
	case err != nil:
		if apiwrite.IsRefused(err) {
			w.Event(pol, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused,
				"the violation status could not be written: "+err.Error())
		}
		// Back into the buffer, for the retry that the error asks for.
		if n := p.buffer.putBack(key, records); n > 0 {
			p.telemetry.bufferDropped(ctx, "full", n)
		}
		return err
	}
	p.finishAcknowledgements(ctx, written, &acks, w)
	return nil
}

// finishAcknowledgements reports unknown acknowledge annotations, removes the
// applied ones and sends the acknowledgement events, once the status that
// applied them is written.
func (p *violationProcessor) finishAcknowledgements(ctx context.Context, pol *v1alpha1.WorkloadNetworkPolicy,
	acks *acknowledgements, w termwriter.PolicyStatusWriter) {
	for _, id := range acks.unknown {
		// Once per annotation, not every sync: the condition keeps saying it.
		if _, seen := p.reported.LoadOrStore(pol.Namespace+"/"+pol.Name+"/"+id, struct{}{}); !seen {
			p.logger.Warn("An acknowledge annotation names no violation record; it stays",
				zap.String("namespace", pol.Namespace), zap.String("name", pol.Name), zap.String("id", id))
			p.telemetry.acknowledged(ctx, 0, 1)
		}
	}
	p.telemetry.acknowledged(ctx, len(acks.moved), 0)
	if len(acks.done) > 0 {
		if err := w.RemoveAnnotations(ctx, pol, acks.done); err != nil {
			// The records are acknowledged; the next sync finds them so and
			// removes the annotations then.
			p.logger.Warn("Could not remove applied acknowledge annotations", zap.String("namespace", pol.Namespace),
				zap.String("name", pol.Name), zap.Error(err))
		}
	}
	if len(acks.moved) == 0 {
		return
	}
	events := plog.NewLogs()
	sl := events.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	provider := p.buffer.providerSeen()
	for i := range acks.moved {
		appendAcknowledged(sl, provider, &acks.moved[i])
	}
	if err := p.next.ConsumeLogs(ctx, events); err != nil {
		p.logger.Warn("Could not send acknowledgement events", zap.Error(err))
	}
}

// forget drops what is held for policy key, which is gone: its buffered
// records (with records, which a write took) and its observed edges, whose
// batches no longer hold the readers' marks back.
func (p *violationProcessor) forget(ctx context.Context, key types.NamespacedName, records map[recordKey]*pending) {
	p.batchMu.Lock()
	records = joinRecords(records, p.buffer.take(key))
	p.observed.Forget(key)
	p.batchMu.Unlock()
	p.telemetry.bufferDropped(ctx, "no_policy", countOf(records))
}

func countOf(records map[recordKey]*pending) int64 {
	var n int64
	for _, r := range records {
		n += r.count
	}
	return n
}
