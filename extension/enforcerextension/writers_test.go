package enforcerextension

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// staleReader answers every Get with one saved copy, as a cache that is behind
// the API server does.
type staleReader struct {
	client.Reader
	copy *v1alpha1.WorkloadNetworkPolicy
}

func (r staleReader) Get(_ context.Context, _ types.NamespacedName, obj client.Object, _ ...client.GetOption) error {
	r.copy.DeepCopyInto(obj.(*v1alpha1.WorkloadNetworkPolicy))
	return nil
}

func setCondition(typ, reason string) func(*v1alpha1.WorkloadNetworkPolicy) bool {
	return func(p *v1alpha1.WorkloadNetworkPolicy) bool {
		return meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "set by the test", ObservedGeneration: p.Generation,
		})
	}
}

func conditionTypes(t *testing.T, key types.NamespacedName) map[string]string {
	t.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(context.Background(), key, &p); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range p.Status.Conditions {
		out[c.Type] = c.Reason
	}
	return out
}

// TestStatusWritersKeepEachOthersConditions: two writers of one policy's
// status, each from a copy read before the other's write, both keep what the
// other wrote. The second write conflicts on the resourceVersion, is applied
// again to the API server's copy, and lands beside the first.
func TestStatusWritersKeepEachOthersConditions(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "two-writers"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	key := client.ObjectKeyFromObject(policy)
	stale := policy.DeepCopy() // what both writers read: no conditions yet

	if _, err := updatePolicyStatus(ctx, staleReader{copy: stale}, env.Client, key,
		setCondition(v1alpha1.ConditionAttributable, v1alpha1.ReasonUniqueTarget)); err != nil {
		t.Fatal(err)
	}
	if _, err := updatePolicyStatus(ctx, staleReader{copy: stale}, env.Client, key,
		setCondition(v1alpha1.ConditionRendered, v1alpha1.ReasonMonitor)); err != nil {
		t.Fatal(err)
	}
	got := conditionTypes(t, key)
	if got[v1alpha1.ConditionAttributable] != v1alpha1.ReasonUniqueTarget || got[v1alpha1.ConditionRendered] != v1alpha1.ReasonMonitor {
		t.Fatalf("conditions %v: a writer's condition was lost to the other's stale copy", got)
	}
}

// TestRenderAndStatusOwnerInQuickSuccession: the render controller and the
// status owner's controller both write a new policy's status at once, and
// again when its mode changes; every condition that either wrote survives.
func TestRenderAndStatusOwnerInQuickSuccession(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	e := startEnforcer(t, "two-writers")
	var rounds atomic.Int64
	watch := []Watch{{Object: &v1alpha1.WorkloadNetworkPolicy{},
		Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}}}
	e.SyncPolicyStatus(watch, func(ctx context.Context, key types.NamespacedName, w PolicyStatusWriter) error {
		if key.Name != "quick-succession" {
			return nil
		}
		_, err := w.UpdateStatus(ctx, key, func(p *v1alpha1.WorkloadNetworkPolicy) bool {
			// A condition whose message changes every round, so that every
			// round writes.
			return meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
				Type: v1alpha1.ConditionAttributable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUniqueTarget,
				Message: "round " + time.Now().Format(time.RFC3339Nano), ObservedGeneration: p.Generation,
			})
		})
		if err == nil {
			rounds.Add(1)
		}
		return err
	})
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "quick-succession"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec, Mode: v1alpha1.PolicyModeProtect},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	key := client.ObjectKeyFromObject(policy)
	both := func(rendered string) func() bool {
		return func() bool {
			got := conditionTypes(t, key)
			return got[v1alpha1.ConditionRendered] == rendered && got[v1alpha1.ConditionAttributable] == v1alpha1.ReasonUniqueTarget
		}
	}
	waitFor(t, "both conditions after the create", 20*time.Second, both(v1alpha1.ReasonProtect))

	// The mode change asks both controllers for a round (spec changed).
	before := rounds.Load()
	if err := env.Client.Get(ctx, key, policy); err != nil {
		t.Fatal(err)
	}
	policy.Spec.Mode = v1alpha1.PolicyModeMonitor
	if err := env.Client.Update(ctx, policy); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the status owner's round after the mode change", 20*time.Second, func() bool { return rounds.Load() > before })
	waitFor(t, "both conditions after the mode change", 20*time.Second, both(v1alpha1.ReasonMonitor))
}
