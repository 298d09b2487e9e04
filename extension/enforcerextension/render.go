package enforcerextension

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// ConditionRendered reports on a policy whether its native object is as the
// policy and its mode say.
const ConditionRendered = "Rendered"

// renderer keeps each WorkloadNetworkPolicy of the kubernetes backend rendered:
// in protect mode a NetworkPolicy of the same name and namespace, owned by the
// policy, with spec.kubernetes as its spec; in monitor mode none (the flows are
// judged in software). Drift on an owned NetworkPolicy is reverted; a
// NetworkPolicy of that name that the policy does not own is left alone and
// reported in the Rendered condition. The istio backend arrives with the Istio
// rendering.
type renderer struct {
	logger *zap.Logger
	reader client.Reader
	client client.Client
}

func (r *renderer) reconcileAll(ctx context.Context) {
	var list v1alpha1.WorkloadNetworkPolicyList
	if err := r.reader.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		if ctx.Err() != nil {
			return
		}
		p := &list.Items[i]
		if p.Spec.Backend != v1alpha1.BackendKubernetes {
			continue
		}
		if err := r.reconcile(ctx, p); err != nil {
			r.logger.Warn("Could not render a policy; retrying", zap.String("namespace", p.Namespace),
				zap.String("name", p.Name), zap.Error(err))
		}
	}
}

func (r *renderer) reconcile(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) error {
	var np networkingv1.NetworkPolicy
	// The cache: a round looks at every policy. A NetworkPolicy created a moment
	// ago that it does not show yet makes the create below fail as existing,
	// which the next round sees.
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, &np)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if exists && !metav1.IsControlledBy(&np, p) {
		return r.setRendered(ctx, p, metav1.ConditionFalse, "NotOwned",
			fmt.Sprintf("a NetworkPolicy %s/%s exists that this policy does not own; it is left as it is", np.Namespace, np.Name))
	}
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		if exists {
			if err := r.client.Delete(ctx, &np, client.Preconditions{UID: &np.UID}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return r.setRendered(ctx, p, metav1.ConditionTrue, "Monitor", "monitor mode: no NetworkPolicy; flows are judged against spec.kubernetes")
	}
	want := p.Spec.Kubernetes.DeepCopy()
	if !exists {
		np = networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}, Spec: *want}
		if err := controllerutil.SetControllerReference(p, &np, r.client.Scheme()); err != nil {
			return err
		}
		if err := r.client.Create(ctx, &np); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if !apiequality.Semantic.DeepEqual(np.Spec, *want) {
		np.Spec = *want // drift, or a changed policy
		if err := r.client.Update(ctx, &np); err != nil {
			return err
		}
	}
	return r.setRendered(ctx, p, metav1.ConditionTrue, "Protect", "protect mode: the NetworkPolicy is rendered")
}

// setRendered writes the Rendered condition when it changes.
func (r *renderer) setRendered(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, status metav1.ConditionStatus, reason, msg string) error {
	c := meta.FindStatusCondition(p.Status.Conditions, ConditionRendered)
	if c != nil && c.Status == status && c.Reason == reason && c.Message == msg && c.ObservedGeneration == p.Generation {
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: ConditionRendered, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(time.Now()),
	})
	return r.client.Status().Patch(ctx, p, patch)
}
