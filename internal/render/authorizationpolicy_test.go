package render

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	securityv1beta1 "istio.io/api/security/v1beta1"
	typev1beta1 "istio.io/api/type/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

const frontendPrincipal = "cluster.local/ns/shop/sa/frontend"

// istioPolicy is an istio-backend policy for the cart workload that allows the
// frontend's identity on port 8080.
func istioPolicy(namespace, name string, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: mode, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendIstio, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
			Istio: &v1alpha1.IstioPolicySpec{
				Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "cart"}},
				Rules: []v1alpha1.IstioRule{{
					From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{Principals: []string{frontendPrincipal}}}},
					To:   []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: []string{"8080"}}}},
				}},
			},
		}},
	}
}

// wantAuthorizationPolicySpec is the spec that istioPolicy renders as, written
// out by hand rather than by the code under test.
func wantAuthorizationPolicySpec() *securityv1beta1.AuthorizationPolicy {
	return &securityv1beta1.AuthorizationPolicy{
		Action:   securityv1beta1.AuthorizationPolicy_ALLOW,
		Selector: &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "cart"}},
		Rules: []*securityv1beta1.Rule{{
			From: []*securityv1beta1.Rule_From{{Source: &securityv1beta1.Source{Principals: []string{frontendPrincipal}}}},
			To:   []*securityv1beta1.Rule_To{{Operation: &securityv1beta1.Operation{Ports: []string{"8080"}}}},
		}},
	}
}

func authorizationPolicy(t *testing.T, name string) (*securityv1.AuthorizationPolicy, bool) {
	t.Helper()
	var ap securityv1.AuthorizationPolicy
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, &ap)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &ap, true
}

// renderedReason returns the reason of the policy's Rendered condition, "" while
// it has none.
func renderedReason(t *testing.T, c client.Client, namespace, name string) string {
	t.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered); cond != nil && cond.ObservedGeneration == p.Generation {
		return cond.Reason
	}
	return ""
}

func setMode(t *testing.T, p *v1alpha1.WorkloadNetworkPolicy, mode v1alpha1.PolicyMode) {
	t.Helper()
	controlplanetest.Edit(t, env.Client, p, func(p *v1alpha1.WorkloadNetworkPolicy) { p.Spec.Mode = mode })
}

// TestRenderAuthorizationPolicy: an istio-backend policy has an ALLOW
// AuthorizationPolicy of its name, owned by it, with spec.istio as its spec, in
// both modes; monitor mode marks it dry-run. A mode change toggles the annotation
// on the same object; drift is reverted; an AuthorizationPolicy the policy does
// not own is left alone and reported.
func TestRenderAuthorizationPolicy(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	startRender(t)
	policy := istioPolicy("shop", "deployment-cart-istio", v1alpha1.PolicyModeMonitor)
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })

	waitFor(t, "the AuthorizationPolicy", 20*time.Second, func() bool { _, ok := authorizationPolicy(t, policy.Name); return ok })
	ap, _ := authorizationPolicy(t, policy.Name)
	uid := ap.UID
	if !metav1.IsControlledBy(ap, policy) {
		t.Fatalf("owner references %+v, want the policy %s as controller", ap.OwnerReferences, policy.UID)
	}
	if ref := metav1.GetControllerOf(ap); ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion ||
		ref.Kind != "WorkloadNetworkPolicy" || ref.Name != policy.Name {
		t.Fatalf("controller reference %+v", ref)
	}
	if ap.Annotations[dryRunAnnotation] != "true" {
		t.Fatalf("monitor mode: annotations %v, want %s: \"true\"", ap.Annotations, dryRunAnnotation)
	}
	if !proto.Equal(&ap.Spec, wantAuthorizationPolicySpec()) {
		t.Fatalf("spec %v, want %v", &ap.Spec, wantAuthorizationPolicySpec())
	}
	// The stored object names its action, though ALLOW is Istio's default.
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(securityv1.SchemeGroupVersion.WithKind("AuthorizationPolicy"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ap), raw); err != nil {
		t.Fatal(err)
	}
	if action, _, _ := unstructured.NestedString(raw.Object, "spec", "action"); action != "ALLOW" {
		t.Fatalf("stored spec.action %q, want ALLOW", action)
	}
	waitFor(t, "Rendered reason Monitor", 20*time.Second, func() bool {
		return renderedReason(t, env.Client, "shop", policy.Name) == v1alpha1.ReasonMonitor
	})

	setMode(t, policy, v1alpha1.PolicyModeProtect)
	waitFor(t, "protect mode to remove the dry-run annotation", 20*time.Second, func() bool {
		got, ok := authorizationPolicy(t, policy.Name)
		_, dryRun := got.Annotations[dryRunAnnotation]
		return ok && !dryRun
	})
	if ap, _ = authorizationPolicy(t, policy.Name); ap.UID != uid || !proto.Equal(&ap.Spec, wantAuthorizationPolicySpec()) {
		t.Fatalf("after the mode change: UID %s (was %s), spec %v", ap.UID, uid, &ap.Spec)
	}
	waitFor(t, "Rendered reason Protect", 20*time.Second, func() bool {
		return renderedReason(t, env.Client, "shop", policy.Name) == v1alpha1.ReasonProtect
	})

	ap, _ = authorizationPolicy(t, policy.Name)
	ap.Annotations = map[string]string{dryRunAnnotation: "true", "example.com/note": "kept"}
	ap.Spec.Action = securityv1beta1.AuthorizationPolicy_DENY
	ap.Spec.Rules[0].From[0].Source.Principals = []string{"cluster.local/ns/shop/sa/intruder"}
	if err := env.Client.Update(ctx, ap); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift to be reverted", 20*time.Second, func() bool {
		ap, ok := authorizationPolicy(t, policy.Name)
		_, dryRun := ap.Annotations[dryRunAnnotation]
		return ok && !dryRun && proto.Equal(&ap.Spec, wantAuthorizationPolicySpec())
	})
	if ap, _ := authorizationPolicy(t, policy.Name); ap.UID != uid || ap.Annotations["example.com/note"] != "kept" {
		t.Fatalf("after the revert: UID %s (was %s), annotations %v", ap.UID, uid, ap.Annotations)
	}

	setMode(t, policy, v1alpha1.PolicyModeMonitor)
	waitFor(t, "monitor mode to add the dry-run annotation back", 20*time.Second, func() bool {
		ap, ok := authorizationPolicy(t, policy.Name)
		return ok && ap.UID == uid && ap.Annotations[dryRunAnnotation] == "true"
	})

	theirs := &securityv1.AuthorizationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-orders-istio"}}
	theirs.Spec.Selector = &typev1beta1.WorkloadSelector{MatchLabels: map[string]string{"app": "mine"}}
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, theirs) })
	other := istioPolicy("shop", theirs.Name, v1alpha1.PolicyModeMonitor)
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, other) })
	waitFor(t, "the NotOwned condition", 20*time.Second, func() bool {
		return renderedReason(t, env.Client, "shop", other.Name) == v1alpha1.ReasonNotOwned
	})
	var p v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), &p); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered); c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "AuthorizationPolicy") || !strings.Contains(c.Message, "does not own") {
		t.Fatalf("condition %+v", c)
	}
	got, _ := authorizationPolicy(t, theirs.Name)
	if got.ResourceVersion != theirs.ResourceVersion || len(got.OwnerReferences) != 0 || len(got.Annotations) != 0 {
		t.Fatalf("an AuthorizationPolicy the policy does not own was changed: %+v", got.ObjectMeta)
	}
}

// TestWithoutIstio: on a cluster that does not serve AuthorizationPolicies (no
// Istio), the enforcer starts, renders kubernetes-backend policies, and reports
// on an istio-backend policy that it cannot render it.
func TestWithoutIstio(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	cp := controlplanetest.Start(t, controlplanetest.Options{WithoutIstio: true})
	startRenderOn(t, cp)

	istio := istioPolicy("default", "deployment-cart-istio", v1alpha1.PolicyModeProtect)
	kube := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "deployment-cart-ingress"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec, Mode: v1alpha1.PolicyModeProtect},
	}
	for _, p := range []*v1alpha1.WorkloadNetworkPolicy{istio, kube} {
		if err := cp.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "Rendered reason NoAuthorizationPolicyCRD", 20*time.Second, func() bool {
		return renderedReason(t, cp.Client, "default", istio.Name) == v1alpha1.ReasonNoAuthorizationPolicyCRD
	})
	waitFor(t, "the NetworkPolicy", 20*time.Second, func() bool {
		err := cp.Client.Get(ctx, client.ObjectKeyFromObject(kube), &networkingv1.NetworkPolicy{})
		return err == nil
	})
}
