package policycontrollerextension

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// revisionTimeout bounds each wait of these tests for a controller's round;
// gcTimeout the wait for the garbage collector, which removes an owned
// object about half a second after its owner once its informers synced.
const (
	revisionTimeout = 30 * time.Second
	gcTimeout       = 60 * time.Second
)

// ingressFrom is an ingress rule that allows the pods of app on TCP port.
func ingressFrom(app string, port int32) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{
		From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
	}
}

func shopKey(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "shop", Name: name}
}

// getPolicy reads the policy from the API server.
func getPolicy(t *testing.T, name string) *v1alpha1.WorkloadNetworkPolicy {
	t.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(context.Background(), shopKey(name), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// editPolicy changes the policy as a person does, on its newest copy: the
// controllers write its annotations meanwhile.
func editPolicy(t *testing.T, name string, edit func(*v1alpha1.WorkloadNetworkPolicy)) {
	t.Helper()
	controlplanetest.Edit(t, env.Client, getPolicy(t, name), edit)
}

// policyRevisions lists the policy's ControllerRevisions, oldest first.
func policyRevisions(t *testing.T, name string) []appsv1.ControllerRevision {
	t.Helper()
	var l appsv1.ControllerRevisionList
	if err := env.Client.List(context.Background(), &l, client.InNamespace("shop"),
		client.MatchingLabels{v1alpha1.PolicyRevisionLabel: name}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(l.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	return l.Items
}

// numbers are the revisions' numbers.
func numbers(revs []appsv1.ControllerRevision) []int64 {
	var out []int64
	for _, r := range revs {
		out = append(out, r.Revision)
	}
	return out
}

// revisionSpec decodes a revision's spec.
func revisionSpec(t *testing.T, r *appsv1.ControllerRevision) v1alpha1.WorkloadNetworkPolicySpec {
	t.Helper()
	var spec v1alpha1.WorkloadNetworkPolicySpec
	if err := json.Unmarshal(r.Data.Raw, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// atRevision waits until the policy names revision n as its current one,
// and that revision exists; it returns both.
func atRevision(t *testing.T, name string, n int64) (*v1alpha1.WorkloadNetworkPolicy, *appsv1.ControllerRevision) {
	t.Helper()
	var (
		p  *v1alpha1.WorkloadNetworkPolicy
		cr *appsv1.ControllerRevision
	)
	waitFor(t, "revision "+strconv.FormatInt(n, 10)+" of "+name, revisionTimeout, func() bool {
		p = getPolicy(t, name)
		if p.Annotations[v1alpha1.RevisionAnnotation] != strconv.FormatInt(n, 10) {
			return false
		}
		for _, r := range policyRevisions(t, name) {
			if r.Revision == n {
				cr = &r
				return true
			}
		}
		return false
	})
	return p, cr
}

// checkRevision checks what a policy's current revision is: its number,
// cause and spec (the policy's own), owned by the policy, and the
// policy's annotations saying as much.
func checkRevision(t *testing.T, p *v1alpha1.WorkloadNetworkPolicy, cr *appsv1.ControllerRevision, cause string) {
	t.Helper()
	if got := cr.Annotations[v1alpha1.ChangeCauseAnnotation]; got != cause {
		t.Errorf("revision %d's cause %q, want %q", cr.Revision, got, cause)
	}
	if got := p.Annotations[v1alpha1.ChangeCauseAnnotation]; got != cause {
		t.Errorf("the policy's change-cause %q at revision %d, want %q", got, cr.Revision, cause)
	}
	if cr.Name != p.Name+"-"+strconv.FormatInt(cr.Revision, 10) {
		t.Errorf("revision %d named %s", cr.Revision, cr.Name)
	}
	if owner := metav1.GetControllerOf(cr); owner == nil || owner.UID != p.UID || !ptr.Deref(owner.BlockOwnerDeletion, false) {
		t.Errorf("revision %d's controller %+v, want the policy %s", cr.Revision, owner, p.UID)
	}
	if spec := revisionSpec(t, cr); !equality.Semantic.DeepEqual(spec, p.Spec) {
		t.Errorf("revision %d holds %+v, want the policy's spec %+v", cr.Revision, spec, p.Spec)
	}
}

// events returns the Events of reason on obj.
func events(t *testing.T, obj client.Object, reason string) []corev1.Event {
	t.Helper()
	var l corev1.EventList
	if err := env.Client.List(context.Background(), &l, client.InNamespace(obj.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.UID == obj.GetUID() && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// networkPolicyIngress waits until the policy's NetworkPolicy allows
// exactly ingress.
func networkPolicyIngress(t *testing.T, name, what string, ingress []networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	waitFor(t, "the NetworkPolicy "+what, revisionTimeout, func() bool {
		var np networkingv1.NetworkPolicy
		if err := env.Client.Get(context.Background(), shopKey(name), &np); err != nil {
			return false
		}
		return len(np.Spec.Ingress) == len(ingress) && (len(ingress) == 0 || equality.Semantic.DeepEqual(np.Spec.Ingress, ingress))
	})
}

// amendment is an amendment of policy p, built on generation built, as the
// writer makes it (owned by the policy, labelled), with spec and the
// promote label of mode.
func amendment(p *v1alpha1.WorkloadNetworkPolicy, name string, built int64, spec v1alpha1.PolicySpec, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicyProposal {
	return &v1alpha1.WorkloadNetworkPolicyProposal{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: name,
			Labels:      map[string]string{v1alpha1.AmendsLabel: p.Name, v1alpha1.PromoteLabel: string(mode)},
			Annotations: map[string]string{v1alpha1.AmendsGenerationAnnotation: strconv.FormatInt(built, 10)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkloadNetworkPolicy", Name: p.Name, UID: p.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: spec,
	}
}

// TestRevisionsAmendmentsAndRollback follows one policy through its life
// after promotion: the promotion is revision 1, an edit by hand revision 2
// ("edited"); a stale amendment is not merged; an amendment promoted in
// protect mode grows the spec as revision 3 and goes, and the NetworkPolicy
// follows; a rollback to revision 1 restores its rules, in protect mode
// still, as revision 4, and the NetworkPolicy follows; a later edit by hand
// is "edited" again; a rollback to a revision that does not exist is
// refused with a Warning Event and its annotation goes; the policy's
// deletion takes its revisions.
func TestRevisionsAmendmentsAndRollback(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	startReplica(t, "revisions")
	const name = "revisions"

	// Promotion: revision 1.
	before := time.Now().UTC().Truncate(time.Second)
	if err := env.Client.Create(ctx, proposal(name, map[string]string{v1alpha1.PromoteLabel: "monitor"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the promoted proposal to go", revisionTimeout, gone(name))
	p, cr := atRevision(t, name, 1)
	checkRevision(t, p, cr, "promoted from proposal "+name)
	promotedAt, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.PromotedAtAnnotation])
	if err != nil || promotedAt.Before(before) || promotedAt.Location() != time.UTC {
		t.Fatalf("promoted-at %q (%v), want UTC from %s on", p.Annotations[v1alpha1.PromotedAtAnnotation], err, before)
	}
	rules1 := p.Spec.PolicySpec

	// An edit by hand: revision 2.
	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
		p.Spec.Kubernetes.Ingress = []networkingv1.NetworkPolicyIngressRule{ingressFrom("frontend", 8080)}
	})
	p, cr = atRevision(t, name, 2)
	checkRevision(t, p, cr, "edited")

	// An amendment built on revision 1's generation is stale: not merged.
	grown := *p.Spec.PolicySpec.DeepCopy()
	grown.Kubernetes.Ingress = append(grown.Kubernetes.Ingress, ingressFrom("checkout", 9090))
	stale := amendment(p, name+"-stale", p.Generation-1, grown, v1alpha1.PolicyModeProtect)
	if err := env.Client.Create(ctx, stale); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a Stale Event on the stale amendment", revisionTimeout, func() bool {
		return len(events(t, stale, v1alpha1.ReasonStale)) > 0
	})
	if e := events(t, stale, v1alpha1.ReasonStale)[0]; e.Type != corev1.EventTypeWarning {
		t.Errorf("Stale Event of type %s", e.Type)
	}
	if gone(stale.Name)() {
		t.Fatal("the stale amendment was deleted")
	}
	if now := getPolicy(t, name); now.Generation != p.Generation || now.Spec.Mode != v1alpha1.PolicyModeMonitor {
		t.Fatalf("a stale amendment changed the policy: generation %d, mode %s", now.Generation, now.Spec.Mode)
	}
	if err := env.Client.Delete(ctx, stale); err != nil {
		t.Fatal(err)
	}

	// An amendment on the policy as it is, promoted in protect mode:
	// revision 3, and the NetworkPolicy follows.
	fresh := amendment(p, name+"-amendment", p.Generation, grown, v1alpha1.PolicyModeProtect)
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the merged amendment to go", revisionTimeout, gone(fresh.Name))
	p, cr = atRevision(t, name, 3)
	checkRevision(t, p, cr, "amendment "+fresh.Name)
	if p.Spec.Mode != v1alpha1.PolicyModeProtect || !equality.Semantic.DeepEqual(p.Spec.PolicySpec, grown) {
		t.Fatalf("after the amendment: mode %s, spec %+v, want protect and %+v", p.Spec.Mode, p.Spec.PolicySpec, grown)
	}
	if at, err := time.Parse(time.RFC3339, p.Annotations[v1alpha1.PromotedAtAnnotation]); err != nil || at.Before(promotedAt) {
		t.Errorf("promoted-at %q after the amendment, want from %s on", p.Annotations[v1alpha1.PromotedAtAnnotation], promotedAt)
	}
	networkPolicyIngress(t, name, "with the amendment's two rules", grown.Kubernetes.Ingress)

	// A rollback to revision 1: its rules, in protect mode still, as
	// revision 4; the annotation goes, and the NetworkPolicy follows.
	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
		p.Annotations[v1alpha1.RollbackToAnnotation] = "1"
	})
	p, cr = atRevision(t, name, 4)
	checkRevision(t, p, cr, "rollback to revision 1")
	if _, ok := p.Annotations[v1alpha1.RollbackToAnnotation]; ok {
		t.Error("the rollback-to annotation stayed")
	}
	if p.Spec.Mode != v1alpha1.PolicyModeProtect || !equality.Semantic.DeepEqual(p.Spec.PolicySpec, rules1) {
		t.Fatalf("after the rollback: mode %s, spec %+v, want protect and revision 1's %+v", p.Spec.Mode, p.Spec.PolicySpec, rules1)
	}
	networkPolicyIngress(t, name, "with revision 1's rules (none)", nil)
	waitFor(t, "a RolledBack Event", revisionTimeout, func() bool { return len(events(t, p, v1alpha1.ReasonRolledBack)) > 0 })

	// An edit by hand after the rollback, the change-cause annotation left
	// as it was: "edited".
	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
		p.Spec.Kubernetes.Ingress = []networkingv1.NetworkPolicyIngressRule{ingressFrom("frontend", 8443)}
	})
	p, cr = atRevision(t, name, 5)
	checkRevision(t, p, cr, "edited")

	// A rollback to a revision that does not exist: refused, the annotation
	// goes, nothing changes.
	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
		p.Annotations[v1alpha1.RollbackToAnnotation] = "42"
	})
	waitFor(t, "a RollbackFailed Event", revisionTimeout, func() bool {
		return len(events(t, p, v1alpha1.ReasonRollbackFailed)) > 0
	})
	waitFor(t, "the refused rollback-to annotation to go", revisionTimeout, func() bool {
		_, ok := getPolicy(t, name).Annotations[v1alpha1.RollbackToAnnotation]
		return !ok
	})
	if e := events(t, p, v1alpha1.ReasonRollbackFailed)[0]; e.Type != corev1.EventTypeWarning {
		t.Errorf("RollbackFailed Event of type %s: %s", e.Type, e.Message)
	}
	if now := getPolicy(t, name); now.Generation != p.Generation || now.Annotations[v1alpha1.RevisionAnnotation] != "5" {
		t.Fatalf("a refused rollback changed the policy: generation %d, revision %s", now.Generation, now.Annotations[v1alpha1.RevisionAnnotation])
	}
	if got := numbers(policyRevisions(t, name)); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("revisions %v", got)
	}

	// The policy's deletion takes its revisions (the garbage collector).
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the garbage collector to delete the revisions", gcTimeout, func() bool {
		return len(policyRevisions(t, name)) == 0
	})
}

// TestRevisionHistoryLimit: a policy made by hand is revision 1 ("edited");
// beyond revision_history_limit revisions the oldest go, and a rollback to
// one of them is refused.
func TestRevisionHistoryLimit(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	cfg := createDefaultConfig().(*Config)
	cfg.RevisionHistoryLimit = 3
	startReplicaWith(t, "revision-history-limit", cfg)
	const name = "history"
	p := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: proposal("x", nil).Spec},
	}
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, p) })
	p, cr := atRevision(t, name, 1)
	checkRevision(t, p, cr, "edited")
	for n := int64(2); n <= 5; n++ {
		editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
			p.Spec.Kubernetes.Ingress = []networkingv1.NetworkPolicyIngressRule{ingressFrom("frontend", 8000+int32(n))}
		})
		p, cr = atRevision(t, name, n)
		checkRevision(t, p, cr, "edited")
	}
	waitFor(t, "the oldest revisions to go", revisionTimeout, func() bool {
		return slices.Equal(numbers(policyRevisions(t, name)), []int64{3, 4, 5})
	})

	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) {
		p.Annotations[v1alpha1.RollbackToAnnotation] = "1"
	})
	waitFor(t, "a RollbackFailed Event", revisionTimeout, func() bool {
		for _, e := range events(t, p, v1alpha1.ReasonRollbackFailed) {
			if e.Message == "revision 1 is not kept (kept: 3 to 5)" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the refused rollback-to annotation to go", revisionTimeout, func() bool {
		_, ok := getPolicy(t, name).Annotations[v1alpha1.RollbackToAnnotation]
		return !ok
	})
	if got := getPolicy(t, name).Annotations[v1alpha1.RevisionAnnotation]; got != "5" {
		t.Fatalf("revision %s after a refused rollback", got)
	}
}

// TestAmendmentIsNeverALeftover: an amendment named like the policy that it
// amends is neither deleted as the policy's leftover nor promoted into a
// policy of its own; unlabelled it stays.
func TestAmendmentIsNeverALeftover(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	r := startReplica(t, "amendment-leftover")
	const name = "amended-alike"
	if err := env.Client.Create(ctx, proposal(name, map[string]string{v1alpha1.PromoteLabel: "monitor"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the promoted proposal to go", revisionTimeout, gone(name))
	p, _ := atRevision(t, name, 1)
	a := amendment(p, name, p.Generation, p.Spec.PolicySpec, "")
	// The policy goes at the end, and its amendment with it (the garbage
	// collector), before the next run (-count) makes a proposal of its name.
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, p)
		waitFor(t, "the amendment to go with its policy", gcTimeout, gone(name))
	})
	delete(a.Labels, v1alpha1.PromoteLabel)
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	key := shopKey(name)
	waitFor(t, "the shared cache to hold the amendment", revisionTimeout, func() bool {
		return r.controller.cluster.Cache().Get(ctx, key, &v1alpha1.WorkloadNetworkPolicyProposal{}) == nil
	})
	before := r.controller.promotion.Rounds(key)
	// A change of the policy asks for a round of the same-named proposal,
	// which the cache holds by then.
	editPolicy(t, name, func(p *v1alpha1.WorkloadNetworkPolicy) { p.Spec.Mode = v1alpha1.PolicyModeProtect })
	waitFor(t, "the promotion round of the amendment", revisionTimeout, func() bool { return r.controller.promotion.Rounds(key) > before })
	if gone(name)() {
		t.Fatal("an amendment named like its policy was deleted as a leftover")
	}
}
