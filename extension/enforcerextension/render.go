package enforcerextension

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// renderer keeps each WorkloadNetworkPolicy rendered as the native object of its
// backend, with the policy's name and namespace and a controller owner reference
// to it: a NetworkPolicy for kubernetes (render_networkpolicy.go), an
// AuthorizationPolicy for istio (render_authorizationpolicy.go). Drift on an owned
// object is reverted; an object of that name that the policy does not control is
// left alone and reported in the Rendered condition.
type renderer struct {
	logger *zap.Logger
	reader client.Reader
	client client.Client
	// authorizationPolicies is whether the cluster serves AuthorizationPolicies,
	// as discovery said at start. Without Istio they are neither watched nor
	// rendered.
	authorizationPolicies bool
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
		if err := r.reconcile(ctx, p); err != nil {
			r.logger.Warn("Could not render a policy; retrying", zap.String("namespace", p.Namespace),
				zap.String("name", p.Name), zap.Error(err))
		}
	}
}

// reconcile renders one policy with the native object of its backend.
func (r *renderer) reconcile(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) error {
	switch p.Spec.Backend {
	case v1alpha1.BackendKubernetes:
		return render(ctx, r, p, networkPolicies{})
	case v1alpha1.BackendIstio:
		if !r.authorizationPolicies {
			// A condition, not an error: nothing changes until the collector
			// restarts, so retrying every round would only fill the log.
			return r.setRendered(ctx, p, metav1.ConditionFalse, v1alpha1.ReasonNoAuthorizationPolicyCRD,
				"the cluster did not serve security.istio.io/v1 AuthorizationPolicies when the collector started: install Istio, then restart the collector")
		}
		return render(ctx, r, p, authorizationPolicies{})
	}
	return nil
}

// nativeKind is one backend's kind of native object: what a policy asks of it.
// What every backend does alike (read, ownership check, create, update, delete
// and the condition) is render's.
type nativeKind[T client.Object] interface {
	// kind names the object in conditions, such as "NetworkPolicy".
	kind() string
	// empty returns an object to read into.
	empty() T
	// outcome says whether the policy, in its mode, asks for an object at all,
	// and the Rendered reason and message once the cluster is as it asks.
	outcome(p *v1alpha1.WorkloadNetworkPolicy) (wanted bool, reason, msg string)
	// desired returns the object that the policy asks for: its name, namespace
	// and every field that the policy decides, without an owner reference.
	desired(p *v1alpha1.WorkloadNetworkPolicy) (T, error)
	// sync sets in have the fields that the policy decides as they are in want,
	// leaving the others (another tool's annotations, the status) alone, and
	// reports whether have changed.
	sync(have, want T) bool
	// encode returns the object as it is sent to the API server.
	encode(obj T) (client.Object, error)
}

// render brings the native object of policy p, of kind k, in line with p.
func render[T client.Object](ctx context.Context, r *renderer, p *v1alpha1.WorkloadNetworkPolicy, k nativeKind[T]) error {
	have := k.empty()
	// The cache: a round looks at every policy. An object created a moment ago
	// that it does not show yet makes the create below fail as existing, which
	// the next round sees.
	err := r.reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, have)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if exists && !metav1.IsControlledBy(have, p) {
		return r.setRendered(ctx, p, metav1.ConditionFalse, v1alpha1.ReasonNotOwned,
			fmt.Sprintf("a %s %s/%s exists that this policy does not own; it is left as it is", k.kind(), p.Namespace, p.Name))
	}
	wanted, reason, msg := k.outcome(p)
	switch {
	case !wanted && exists:
		// The UID precondition keeps an object made again in the meantime.
		if err := r.client.Delete(ctx, have, client.Preconditions{UID: ptr.To(have.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case wanted:
		want, err := k.desired(p)
		if err != nil {
			return err
		}
		if !exists {
			if err := controllerutil.SetControllerReference(p, want, r.client.Scheme()); err != nil {
				return err
			}
			enc, err := k.encode(want)
			if err != nil {
				return err
			}
			if err := r.client.Create(ctx, enc); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		} else if k.sync(have, want) { // drift, a changed policy or a mode change
			enc, err := k.encode(have)
			if err != nil {
				return err
			}
			if err := r.client.Update(ctx, enc); err != nil {
				return err
			}
		}
	}
	return r.setRendered(ctx, p, metav1.ConditionTrue, reason, msg)
}

// setRendered writes the Rendered condition when it changes.
func (r *renderer) setRendered(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, status metav1.ConditionStatus, reason, msg string) error {
	c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered)
	if c != nil && c.Status == status && c.Reason == reason && c.Message == msg && c.ObservedGeneration == p.Generation {
		return nil
	}
	patch := client.MergeFrom(p.DeepCopy())
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionRendered, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(time.Now()),
	})
	return r.client.Status().Patch(ctx, p, patch)
}
