package violationprocessor

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// runSync merges the buffer into the policies' status every status sync
// interval while this replica leads. A standby keeps buffering what reaches
// it, bounded, for when it leads.
func (p *violationProcessor) runSync(ctx context.Context) {
	t := time.NewTicker(p.cfg.StatusSyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.syncOnce(ctx)
		}
	}
}

// syncOnce writes one round: every policy that has buffered records, acknowledge
// annotations, or a condition to change.
func (p *violationProcessor) syncOnce(ctx context.Context) {
	taken, provider := p.buffer.take()
	var list v1alpha1.WorkloadNetworkPolicyList
	if err := p.enforcer.Reader().List(ctx, &list); err != nil {
		p.putBack(ctx, taken)
		return
	}
	targets := map[string][]string{}
	for i := range list.Items {
		k := targetKey(&list.Items[i])
		targets[k] = append(targets[k], list.Items[i].Name)
	}
	events := plog.NewLogs()
	sl := events.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range list.Items {
		if ctx.Err() != nil {
			break
		}
		pol := &list.Items[i]
		name := types.NamespacedName{Namespace: pol.Namespace, Name: pol.Name}
		records := taken[name]
		delete(taken, name)
		others := slices.DeleteFunc(slices.Clone(targets[targetKey(pol)]), func(n string) bool { return n == pol.Name })
		acks, err := p.syncPolicy(ctx, pol, records, others)
		if err != nil {
			p.logger.Warn("Could not write a policy's violation status; the next sync tries again",
				zap.String("namespace", pol.Namespace), zap.String("name", pol.Name), zap.Error(err))
			p.putBack(ctx, map[types.NamespacedName]map[recordKey]*pending{name: records})
			continue
		}
		for j := range acks {
			appendAcknowledged(sl, provider, &acks[j])
		}
	}
	// What is left names policies that are gone: nothing to write it to.
	for _, records := range taken {
		p.telemetry.bufferDropped(ctx, "no_policy", countOf(records))
	}
	if sl.LogRecords().Len() > 0 {
		if err := p.next.ConsumeLogs(ctx, events); err != nil {
			p.logger.Warn("Could not send acknowledgement events", zap.Error(err))
		}
	}
}

// syncPolicy writes one policy's status, then removes the acknowledge
// annotations it applied, and returns the records it acknowledged.
func (p *violationProcessor) syncPolicy(ctx context.Context, pol *v1alpha1.WorkloadNetworkPolicy,
	records map[recordKey]*pending, others []string) ([]v1alpha1.AcknowledgedViolation, error) {
	var acks acknowledgements
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			// The cache was behind the API server: read the policy from it.
			fresh := &v1alpha1.WorkloadNetworkPolicy{}
			if err := p.enforcer.Client().Get(ctx, client.ObjectKeyFromObject(pol), fresh); err != nil {
				return err
			}
			pol = fresh
		}
		first = false
		st := pol.Status.DeepCopy()
		merge(st, records)
		acks = acknowledge(st, pol.Annotations, time.Now())
		setAttributable(pol, st, others)
		setAcknowledged(pol, st, acks.unknown)
		if apiequality.Semantic.DeepEqual(st, &pol.Status) {
			return nil
		}
		updated := pol.DeepCopy()
		updated.Status = *st
		err := p.enforcer.Client().Status().Update(ctx, updated)
		p.telemetry.statusWrite(ctx, err)
		return err
	})
	if apierrors.IsNotFound(err) {
		p.telemetry.bufferDropped(ctx, "no_policy", countOf(records))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
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
		if err := p.removeAnnotations(ctx, pol, acks.done); err != nil {
			// The records are acknowledged; the next sync finds them so and
			// removes the annotations then.
			p.logger.Warn("Could not remove applied acknowledge annotations", zap.String("namespace", pol.Namespace),
				zap.String("name", pol.Name), zap.Error(err))
		}
	}
	return acks.moved, nil
}

// removeAnnotations deletes annotation keys from a policy with a merge patch,
// which touches nothing else.
func (p *violationProcessor) removeAnnotations(ctx context.Context, pol *v1alpha1.WorkloadNetworkPolicy, keys []string) error {
	annotations := map[string]any{}
	for _, k := range keys {
		annotations[k] = nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return p.enforcer.Client().Patch(ctx, pol, client.RawPatch(types.MergePatchType, body))
}

// putBack returns records that could not be written to the buffer.
func (p *violationProcessor) putBack(ctx context.Context, taken map[types.NamespacedName]map[recordKey]*pending) {
	for _, name := range slices.SortedFunc(maps.Keys(taken), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if n := p.buffer.putBack(name, taken[name]); n > 0 {
			p.telemetry.bufferDropped(ctx, "full", n)
		}
	}
}

// targetKey groups policies that target the same workload and direction.
func targetKey(p *v1alpha1.WorkloadNetworkPolicy) string {
	return p.Namespace + "/" + string(p.Spec.TargetRef.Kind) + "/" + p.Spec.TargetRef.Name + "/" + string(p.Spec.Direction)
}

func countOf(records map[recordKey]*pending) int64 {
	var n int64
	for _, r := range records {
		n += r.count
	}
	return n
}
