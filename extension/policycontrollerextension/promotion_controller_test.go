package policycontrollerextension

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// proposal is clustertest.CartProposal.
var proposal = clustertest.CartProposal

func gone(name string) func() bool {
	return func() bool {
		err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, &v1alpha1.WorkloadNetworkPolicyProposal{})
		return apierrors.IsNotFound(err)
	}
}

// TestPromotion: a proposal labelled for promotion becomes a policy of the same
// name, namespace and spec, in the mode the label names, marked as promoted from
// it; the proposal goes. A proposal that comes back while that policy exists goes
// as a leftover; one whose name a hand-made policy has stays.
func TestPromotion(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	r := startReplica(t, "promotion")
	// What the test makes goes at its end, so that it runs again
	// (-count): the policies, and the proposal named like the hand-made one.
	t.Cleanup(func() {
		for _, name := range []string{"promote-monitor", "promote-protect", "hand-made"} {
			key := types.NamespacedName{Namespace: "shop", Name: name}
			_ = env.Client.Delete(ctx, &v1alpha1.WorkloadNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
			waitFor(t, "the policy "+name+" to go", 20*time.Second, func() bool {
				return apierrors.IsNotFound(env.Client.Get(ctx, key, &v1alpha1.WorkloadNetworkPolicy{}))
			})
		}
		_ = env.Client.Delete(ctx, proposal("hand-made", nil))
		waitFor(t, "the proposal hand-made to go", 20*time.Second, gone("hand-made"))
	})
	for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
		name := "promote-" + string(mode)
		p := proposal(name, nil)
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		// The proposal's evidence, as the proposal writer writes it.
		seen := metav1.NewTime(time.Now().Truncate(time.Second))
		p.Status.Observed = []v1alpha1.ObservedEdge{{
			Peer:     v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassWorkload, Namespace: "shop", Kind: "Deployment", Name: "frontend"},
			Protocol: corev1.ProtocolTCP, Port: 8080, Flows: 7, FirstSeen: seen, LastSeen: seen, Verdict: v1alpha1.VerdictAllowed,
		}}
		p.Status.ObservedEdges = 1
		if err := env.Client.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		p.Labels = map[string]string{v1alpha1.PromoteLabel: string(mode)}
		if err := env.Client.Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the promoted proposal to go", 20*time.Second, gone(name))
		var policy v1alpha1.WorkloadNetworkPolicy
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: name}, &policy); err != nil {
			t.Fatal(err)
		}
		if policy.Spec.Mode != mode || policy.Labels[v1alpha1.PromotedFromLabel] != name ||
			policy.Spec.Kubernetes == nil || policy.Spec.TargetRef.Name != "cart" {
			t.Fatalf("policy %+v", policy)
		}
		// No status owner runs here: the evidence is in the policy's status
		// because the promotion handed it on before the proposal went.
		if !equality.Semantic.DeepEqual(policy.Status.ObservedTraffic, p.Status.ObservedTraffic) {
			t.Fatalf("the policy's observed edges %+v, want the proposal's %+v", policy.Status.ObservedTraffic, p.Status.ObservedTraffic)
		}
	}

	leftover := proposal("promote-monitor", nil)
	if err := env.Client.Create(ctx, leftover); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the leftover proposal to go", 20*time.Second, gone("promote-monitor"))

	handMade := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "hand-made"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec},
	}
	if err := env.Client.Create(ctx, handMade); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "shop", Name: "hand-made"}
	waitFor(t, "the promotion round of the hand-made policy", 20*time.Second, func() bool { return r.controller.promotion.Rounds(key) > 0 })
	before := r.controller.promotion.Rounds(key)
	same := proposal("hand-made", nil)
	if err := env.Client.Create(ctx, same); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the promotion round of the proposal", 20*time.Second, func() bool { return r.controller.promotion.Rounds(key) > before })
	if gone("hand-made")() {
		t.Fatal("a proposal named like a hand-made policy was deleted")
	}
}
