package k8swriterexporter

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
)

// errWorkloadGone: the workload no longer exists; its proposal goes with it.
var errWorkloadGone = errors.New("workload gone")

// reconcile brings one proposal up to what was learned: it creates it, or adds
// the new peers and ports to it. The spec it writes is the union of what the
// proposal holds and what was learned, so nothing learned before (by an earlier
// run or another leader) is lost; when the union is what the proposal holds,
// nothing is written.
func (w *writer) reconcile(ctx context.Context, key proposalKey, l *learned, pw enforcerextension.ProposalWriter) error {
	if w.enforcer.HasPolicy(key.workload, key.direction) {
		return nil // a policy governs it: learning for it is over
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
	learnedRules := rules{}
	for peer, ports := range l.peers {
		if peer.cidr != "" {
			learnedRules.add(ipBlockRule(peer.cidr, ports))
			continue
		}
		r := &rule{principal: peer.principal, ports: ports}
		if peer.principal == "" {
			sel, _, ok := w.enforcer.Selector(ctx, peer.workload)
			if !ok {
				continue // the peer is gone: nothing to allow
			}
			r.namespace, r.selector = peer.workload.Namespace, sel
		}
		learnedRules.add(r)
	}
	if len(learnedRules) == 0 {
		return nil
	}
	name := ProposalName(key.workload, key.direction)
	target := v1alpha1.TargetRef{Kind: key.workload.Kind, Name: key.workload.Name}
	nn := types.NamespacedName{Namespace: key.workload.Namespace, Name: name}

	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var existing v1alpha1.WorkloadNetworkPolicyProposal
		err := pw.Get(ctx, nn, &existing)
		if apierrors.IsNotFound(err) {
			p := &v1alpha1.WorkloadNetworkPolicyProposal{
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: nn.Namespace,
					Labels:          map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedBy},
					OwnerReferences: []metav1.OwnerReference{ownerRef(key.workload.Kind, key.workload.Name, uid)},
				},
				Spec: render(l.backend, target, key.direction, podSelector, learnedRules),
			}
			return w.write(ctx, pw, p, func() error { return pw.Create(ctx, p) }, "create")
		}
		if err != nil {
			return err
		}
		if existing.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedBy || !ownedBy(&existing, uid) || existing.Spec.Backend != l.backend {
			// Made by someone else, for an earlier workload of that name, or for
			// another data plane: not the writer's to change.
			w.set.Logger.Debug("Leaving a proposal that is not the writer's to change",
				zap.String("namespace", nn.Namespace), zap.String("name", name))
			return nil
		}
		merged := rulesOf(&existing.Spec)
		for _, r := range learnedRules {
			merged.add(r)
		}
		spec := render(existing.Spec.Backend, target, key.direction, podSelector, merged)
		if apiequality.Semantic.DeepEqual(spec, existing.Spec) {
			return nil
		}
		existing.Spec = spec
		return w.write(ctx, pw, &existing, func() error { return pw.Update(ctx, &existing) }, "update")
	})
}

// write waits for the rate limiter, then writes and counts. A write that the
// API server refuses for what it holds is recorded as an Event on the proposal.
func (w *writer) write(ctx context.Context, pw enforcerextension.ProposalWriter, p *v1alpha1.WorkloadNetworkPolicyProposal,
	do func() error, op string) error {
	if err := w.limiter.Wait(ctx); err != nil {
		return err
	}
	err := do()
	w.telemetry.wrote(ctx, op, err)
	if enforcerextension.IsRefused(err) {
		pw.Event(p, corev1.EventTypeWarning, v1alpha1.EventReasonWriteRefused, fmt.Sprintf("the proposal could not be written (%s): %v", op, err))
	}
	return err
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
