package render

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
)

// renderer keeps each WorkloadNetworkPolicy rendered as the native object of its
// backend, with the policy's name and namespace and a controller owner reference
// to it: a NetworkPolicy for kubernetes (render_networkpolicy.go), an
// AuthorizationPolicy for istio (render_authorizationpolicy.go), a
// CiliumNetworkPolicy for cilium (render_ciliumnetworkpolicy.go). Drift on an owned
// object is reverted; an object of that name that the policy does not control is
// left alone and reported in the Rendered condition.
type renderer struct {
	logger   *zap.Logger
	reader   client.Reader
	client   client.Client
	recorder record.EventRecorder
	// served is which optional native kinds the cluster serves, as discovery
	// said at start. Without Istio or Cilium their kinds are neither watched
	// nor rendered.
	served ServedKinds
}

// NewController is the render controller on each term: one policy a reconcile, told
// of every change to a policy's spec and of every change to an object of a
// rendered kind, which has its policy's name (drift, or an object in the way
// that goes).
func NewController(logger *zap.Logger, reader client.Reader, c client.Client, recorder record.EventRecorder, served ServedKinds) *termcontroller.Controller {
	r := &renderer{logger: logger, reader: reader, client: c, recorder: recorder, served: served}
	watches := []termcontroller.Watch{{Object: &v1alpha1.WorkloadNetworkPolicy{},
		Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}}}
	for _, obj := range NativeTypes(served) {
		watches = append(watches, termcontroller.Watch{Object: obj})
	}
	watches = append(watches, outsideWatches(reader)...)
	return termcontroller.New("render", watches, func(ctx context.Context, key types.NamespacedName) error {
		var p v1alpha1.WorkloadNetworkPolicy
		if err := r.reader.Get(ctx, key, &p); err != nil {
			// A policy that is gone takes its native object with it (the
			// owner reference); nothing is ours to do.
			return client.IgnoreNotFound(err)
		}
		err := r.reconcile(ctx, &p)
		if err != nil && ctx.Err() == nil {
			r.recorder.Eventf(&p, corev1.EventTypeWarning, v1alpha1.EventReasonRenderFailed, "%v", err)
			if apiwrite.IsRefused(err) {
				// Retrying will not help until the policy changes: say so on it.
				if cerr := r.setRendered(ctx, &p, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, err.Error()); cerr != nil {
					r.logger.Warn("Could not write the Rendered condition", zap.Error(cerr))
				}
			}
		}
		return err
	})
}

// reconcile renders one policy with the native object of its backend.
func (r *renderer) reconcile(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) error {
	switch {
	case p.Spec.Backend == v1alpha1.BackendIstio && !r.served.AuthorizationPolicies:
		// A condition, not an error: nothing changes until the collector
		// restarts, so retrying every round would only fill the log.
		return r.setRendered(ctx, p, metav1.ConditionFalse, v1alpha1.ReasonNoAuthorizationPolicyCRD,
			"the cluster did not serve security.istio.io/v1 AuthorizationPolicies when the collector started: install Istio, then restart the collector")
	case p.Spec.Backend == v1alpha1.BackendCilium && !r.served.CiliumNetworkPolicies:
		return r.setRendered(ctx, p, metav1.ConditionFalse, v1alpha1.ReasonNoCiliumNetworkPolicyCRD,
			"the cluster did not serve cilium.io/v2 CiliumNetworkPolicies when the collector started: install Cilium, then restart the collector")
	}
	k, err := backendKind(ctx, r.reader, p)
	if err != nil || k == nil {
		return err
	}
	return k.render(ctx, r, p)
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
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered); c == nil || c.Reason != v1alpha1.ReasonNotOwned {
			r.recorder.Eventf(p, corev1.EventTypeWarning, v1alpha1.EventReasonNotOwned,
				"a %s %s/%s exists that this policy does not own; it is left as it is", k.kind(), p.Namespace, p.Name)
		}
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
		r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.EventReasonRendered, "deleted the %s: %s", k.kind(), msg)
	case wanted && !exists:
		// What the render subcommand and the review page show (native.go).
		enc, err := createdObject(p, k, r.client.Scheme())
		if err != nil {
			return err
		}
		if err := r.client.Create(ctx, enc); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // the cache was behind: the object's add event brings the policy back
			}
			return err
		}
		r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.EventReasonRendered, "created the %s: %s", k.kind(), msg)
	case wanted:
		want, err := k.desired(p)
		if err != nil {
			return err
		}
		if k.sync(have, want) { // drift, a changed policy or a mode change
			enc, err := k.encode(have)
			if err != nil {
				return err
			}
			if err := r.client.Update(ctx, enc); err != nil {
				return err
			}
			r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.EventReasonRendered, "updated the %s: %s", k.kind(), msg)
		}
	}
	return r.setRendered(ctx, p, metav1.ConditionTrue, reason, msg)
}

// setRendered applies the Rendered condition, its one field of the status,
// when it changes: the status owner's conditions and records, written a
// moment before, stay.
func (r *renderer) setRendered(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, status metav1.ConditionStatus, reason, msg string) error {
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered); c != nil && c.Status == status &&
		c.Reason == reason && c.Message == msg && c.ObservedGeneration == p.Generation {
		return nil
	}
	var previous string
	_, err := apiwrite.UpdatePolicyStatus(ctx, r.reader, r.client, client.ObjectKeyFromObject(p), apiwrite.RenderManager, func(fresh *v1alpha1.WorkloadNetworkPolicy) bool {
		c := meta.FindStatusCondition(fresh.Status.Conditions, v1alpha1.ConditionRendered)
		if c != nil && c.Status == status && c.Reason == reason && c.Message == msg && c.ObservedGeneration == fresh.Generation {
			return false
		}
		if c != nil {
			previous = c.Reason
		}
		meta.SetStatusCondition(&fresh.Status.Conditions, metav1.Condition{
			Type: v1alpha1.ConditionRendered, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: fresh.Generation, LastTransitionTime: metav1.NewTime(time.Now()),
		})
		return true
	})
	if err == nil && isMode(previous) && isMode(reason) && previous != reason {
		r.recorder.Eventf(p, corev1.EventTypeNormal, v1alpha1.EventReasonModeChanged, "%s mode: %s", strings.ToLower(reason), msg)
	}
	return err
}

func isMode(reason string) bool {
	return reason == v1alpha1.ReasonMonitor || reason == v1alpha1.ReasonProtect
}
