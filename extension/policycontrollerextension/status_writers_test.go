package policycontrollerextension

import (
	"context"

	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
)

// TestRenderAndStatusOwnerInQuickSuccession: the render controller and the
// status owner's controller both write a new policy's status at once, and
// again when its mode changes; every condition that either wrote survives.
func TestRenderAndStatusOwnerInQuickSuccession(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	r := startReplica(t, "two-writers")
	var rounds atomic.Int64
	watch := []termwriter.Watch{{Object: &v1alpha1.WorkloadNetworkPolicy{},
		Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}}}
	runner, err := termwriter.Find(r.Host, enforcerextension.DefaultReference(), leaderelectorextension.DefaultReference(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	runner.SyncPolicyStatus(watch, func(ctx context.Context, key types.NamespacedName, w termwriter.PolicyStatusWriter) error {
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
			got := controlplanetest.PolicyConditions(t, env.Client, key)
			return got[v1alpha1.ConditionRendered] == rendered && got[v1alpha1.ConditionAttributable] == v1alpha1.ReasonUniqueTarget
		}
	}
	waitFor(t, "both conditions after the create", 20*time.Second, both(v1alpha1.ReasonProtect))

	// The mode change asks both controllers for a round (spec changed).
	before := rounds.Load()
	controlplanetest.Edit(t, env.Client, policy, func(p *v1alpha1.WorkloadNetworkPolicy) { p.Spec.Mode = v1alpha1.PolicyModeMonitor })
	waitFor(t, "the status owner's round after the mode change", 20*time.Second, func() bool { return rounds.Load() > before })
	waitFor(t, "both conditions after the mode change", 20*time.Second, both(v1alpha1.ReasonMonitor))
}
