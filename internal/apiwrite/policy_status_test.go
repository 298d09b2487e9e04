package apiwrite

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
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

// cacheReader reads policies from the API server as the shared cache keeps
// them: without managed fields but an earlier version's status update mark
// (StripManagedFieldsButLegacy).
type cacheReader struct{ client.Reader }

func (r cacheReader) Get(ctx context.Context, key types.NamespacedName, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	_, err := StripManagedFieldsButLegacy(obj)
	return err
}

func setCondition(typ, reason string) func(*v1alpha1.WorkloadNetworkPolicy) bool {
	return func(p *v1alpha1.WorkloadNetworkPolicy) bool {
		return meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "set by the test", ObservedGeneration: p.Generation,
		})
	}
}

// TestStatusWritersKeepEachOthersConditions: two writers of one policy's
// status, each from a copy read before the other's write, both keep what the
// other wrote. The second write conflicts on the resourceVersion, is applied
// again to the API server's copy, and lands beside the first.
func TestStatusWritersKeepEachOthersConditions(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	key := createPolicy(t, "two-writers")
	stale := getPolicy(t, key) // what both writers read: no conditions yet

	if _, err := UpdatePolicyStatus(ctx, staleReader{copy: stale}, env.Client, key, StatusOwnerManager,
		setCondition(v1alpha1.ConditionAttributable, v1alpha1.ReasonUniqueTarget)); err != nil {
		t.Fatal(err)
	}
	if _, err := UpdatePolicyStatus(ctx, staleReader{copy: stale}, env.Client, key, RenderManager,
		setCondition(v1alpha1.ConditionRendered, v1alpha1.ReasonMonitor)); err != nil {
		t.Fatal(err)
	}
	got := controlplanetest.PolicyConditions(t, env.Client, key)
	if got[v1alpha1.ConditionAttributable] != v1alpha1.ReasonUniqueTarget || got[v1alpha1.ConditionRendered] != v1alpha1.ReasonMonitor {
		t.Fatalf("conditions %v: a writer's condition was lost to the other's stale copy", got)
	}
}

// createPolicy creates a policy for the test, deleted at its end.
func createPolicy(t *testing.T, name string) types.NamespacedName {
	t.Helper()
	ctx := context.Background()
	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			},
		}},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	return client.ObjectKeyFromObject(policy)
}

func getPolicy(t *testing.T, key types.NamespacedName) *v1alpha1.WorkloadNetworkPolicy {
	t.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(context.Background(), key, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// statusFieldsOf is the status fields that manager owns, as the API server
// records them (FieldsV1), or "" when it owns none.
func statusFieldsOf(p *v1alpha1.WorkloadNetworkPolicy, manager string) string {
	for _, e := range p.ManagedFields {
		if e.Manager == manager && e.Subresource == "status" && e.FieldsV1 != nil {
			return e.FieldsV1.GetRawString()
		}
	}
	return ""
}

func removeCondition(typ string) func(*v1alpha1.WorkloadNetworkPolicy) bool {
	return func(p *v1alpha1.WorkloadNetworkPolicy) bool {
		return meta.RemoveStatusCondition(&p.Status.Conditions, typ)
	}
}

// TestEachStatusWriterOwnsItsFields: the three writers of a policy's status
// apply their own fields under their own field manager. The API server then
// records the Rendered condition as the render controller's alone and the
// rest as the status owner's; the status owner takes over the evidence that
// the promoter handed on, a count that it sets to zero included; and a
// condition that a writer no longer sets is gone, while the other writer's
// stays.
func TestEachStatusWriterOwnsItsFields(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	key := createPolicy(t, "field-owners")
	write := func(m StatusManager, mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) {
		t.Helper()
		if _, err := UpdatePolicyStatus(ctx, env.Client, env.Client, key, m, mutate); err != nil {
			t.Fatalf("%s: %v", m.Manager, err)
		}
	}
	write(PromotionManager, func(p *v1alpha1.WorkloadNetworkPolicy) bool {
		p.Status.ObservedTraffic = v1alpha1.ObservedTraffic{ObservedEdges: 5, WouldBlockEdges: 1, OmittedEdges: 3}
		return true
	})
	write(RenderManager, setCondition(v1alpha1.ConditionRendered, v1alpha1.ReasonMonitor))
	write(StatusOwnerManager, func(p *v1alpha1.WorkloadNetworkPolicy) bool {
		setCondition(v1alpha1.ConditionAttributable, v1alpha1.ReasonUniqueTarget)(p)
		setCondition(v1alpha1.ConditionUnusedRules, "Test")(p)
		p.Status.ObservedTraffic = v1alpha1.ObservedTraffic{ObservedEdges: 2}
		return true
	})

	p := getPolicy(t, key)
	if o := p.Status.ObservedTraffic; o.ObservedEdges != 2 || o.WouldBlockEdges != 0 || o.OmittedEdges != 0 {
		t.Fatalf("observed traffic %+v: want the status owner's counts (2, 0, 0), not the ones handed on", o)
	}
	render, owner := statusFieldsOf(p, RenderManager.Manager), statusFieldsOf(p, StatusOwnerManager.Manager)
	if !strings.Contains(render, `\"type\":\"Rendered\"`) || strings.Contains(render, "Attributable") || strings.Contains(render, "omittedEdges") {
		t.Fatalf("the render controller owns %s: want the Rendered condition alone", render)
	}
	if strings.Contains(owner, `\"type\":\"Rendered\"`) || !strings.Contains(owner, "Attributable") || !strings.Contains(owner, "omittedEdges") {
		t.Fatalf("the status owner owns %s: want its conditions and the evidence, not Rendered", owner)
	}
	if promoted := statusFieldsOf(p, PromotionManager.Manager); strings.Contains(promoted, "omittedEdges") {
		t.Fatalf("the promoter still owns %s after the status owner took the evidence over", promoted)
	}

	write(StatusOwnerManager, removeCondition(v1alpha1.ConditionUnusedRules))
	if got := controlplanetest.PolicyConditions(t, env.Client, key); got[v1alpha1.ConditionUnusedRules] != "" || got[v1alpha1.ConditionRendered] != v1alpha1.ReasonMonitor ||
		got[v1alpha1.ConditionAttributable] != v1alpha1.ReasonUniqueTarget {
		t.Fatalf("conditions %v: want UnusedRules gone, Rendered and Attributable kept", got)
	}
}

// TestAnEarlierVersionsStatusIsTakenOver: a policy whose status an earlier
// version wrote by update (one field manager for every field) is taken over
// at the first write: a condition that the status owner then stops setting is
// gone, where the earlier manager's ownership would have kept it. The policy
// is read as the shared cache keeps it, and the other writers' ownership
// stays.
func TestAnEarlierVersionsStatusIsTakenOver(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	key := createPolicy(t, "earlier-version")
	p := getPolicy(t, key)
	setCondition(v1alpha1.ConditionRendered, v1alpha1.ReasonMonitor)(p)
	setCondition(v1alpha1.ConditionUnusedRules, "Test")(p)
	if err := env.Client.Status().Update(ctx, p, client.FieldOwner(LegacyStatusManager)); err != nil {
		t.Fatal(err)
	}
	if statusFieldsOf(getPolicy(t, key), LegacyStatusManager) == "" {
		t.Fatal("the earlier version's update left no field manager")
	}
	// The status owner's first write keeps UnusedRules; its next drops it.
	// Both read the policy as the shared cache keeps it.
	if _, err := UpdatePolicyStatus(ctx, cacheReader{env.Client}, env.Client, key, StatusOwnerManager,
		setCondition(v1alpha1.ConditionAttributable, v1alpha1.ReasonUniqueTarget)); err != nil {
		t.Fatal(err)
	}
	if _, err := UpdatePolicyStatus(ctx, cacheReader{env.Client}, env.Client, key, StatusOwnerManager,
		removeCondition(v1alpha1.ConditionUnusedRules)); err != nil {
		t.Fatal(err)
	}
	got := controlplanetest.PolicyConditions(t, env.Client, key)
	if got[v1alpha1.ConditionUnusedRules] != "" || got[v1alpha1.ConditionRendered] != v1alpha1.ReasonMonitor {
		t.Fatalf("conditions %v: want UnusedRules gone and Rendered kept", got)
	}
	after := getPolicy(t, key)
	if fields := statusFieldsOf(after, LegacyStatusManager); fields != "" {
		t.Fatalf("the earlier version still owns %s", fields)
	}
	// The policy's creator still owns its spec: the patch removed only the
	// earlier version's entry.
	for _, e := range after.ManagedFields {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" && strings.Contains(e.FieldsV1.GetRawString(), "f:spec") {
			return
		}
	}
	t.Fatalf("no manager owns the spec any more: %+v", after.ManagedFields)
}
