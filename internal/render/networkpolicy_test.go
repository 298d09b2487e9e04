package render

import (
	"context"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

func networkPolicy(t *testing.T, name string) (*networkingv1.NetworkPolicy, bool) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, &np)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &np, true
}

// TestRenderNetworkPolicy: a kubernetes-backend policy in protect mode has a
// NetworkPolicy of its name, owned by it, with its spec; drift is reverted;
// monitor mode removes it; a NetworkPolicy the policy does not own is left alone
// and reported.
func TestRenderNetworkPolicy(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	startRender(t)
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-cart-ingress"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec, Mode: v1alpha1.PolicyModeProtect},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	waitFor(t, "the NetworkPolicy", 20*time.Second, func() bool { _, ok := networkPolicy(t, policy.Name); return ok })
	np, _ := networkPolicy(t, policy.Name)
	if !metav1.IsControlledBy(np, policy) || np.Spec.PodSelector.MatchLabels["app"] != "cart" {
		t.Fatalf("NetworkPolicy %+v", np)
	}

	np.Spec.PodSelector.MatchLabels["app"] = "drifted"
	if err := env.Client.Update(ctx, np); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift to be reverted", 20*time.Second, func() bool {
		np, ok := networkPolicy(t, policy.Name)
		return ok && np.Spec.PodSelector.MatchLabels["app"] == "cart"
	})

	setMode(t, policy, v1alpha1.PolicyModeMonitor)
	waitFor(t, "monitor mode to remove the NetworkPolicy", 20*time.Second, func() bool { _, ok := networkPolicy(t, policy.Name); return !ok })

	theirs := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-orders-ingress"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "mine"}}}}
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	other := policy.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Namespace: "shop", Name: "deployment-orders-ingress"}
	other.Spec.Mode = v1alpha1.PolicyModeProtect
	other.Status = v1alpha1.WorkloadNetworkPolicyStatus{}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, other) })
	waitFor(t, "the NotOwned condition", 20*time.Second, func() bool {
		var p v1alpha1.WorkloadNetworkPolicy
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: other.Name}, &p); err != nil {
			return false
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionRendered)
		return c != nil && c.Reason == "NotOwned" && strings.Contains(c.Message, "does not own")
	})
	if np, _ := networkPolicy(t, "deployment-orders-ingress"); np.Spec.PodSelector.MatchLabels["app"] != "mine" {
		t.Fatal("a NetworkPolicy the policy does not own was changed")
	}
}
