package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// newClientRevision is a release of guarded/client: a ReplicaSet of a new
// pod template (image client:2.0) and its pod, at an address of its own.
var newClientRevision = flow.Endpoint{Address: "10.0.8.21", Namespace: "guarded", Pod: "client-9f8e7d6c5-x1y2z",
	Identity: "cluster.local/ns/guarded/sa/client"}

// TestAmendmentFollowsARelease: guarded/api's ingress policy, promoted from
// what learning saw (the client on 8080), then a release of the client that
// calls api on 9090, and the old intruder calling it on 7070. In monitor
// (judged by the spec) and in protect (refused by the data plane), both
// edges are learned into the policy's amendment: 9090 as NewRevision, tied
// to the client's new ReplicaSet and image, 7070 as LearnedRevision, which
// keeps the amendment from Ready. Promoting the amendment grows the policy
// and its NetworkPolicy; a rollback restores the first revision's spec.
func TestAmendmentFollowsARelease(t *testing.T) {
	controlplanetest.Require(t)
	for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
		t.Run(string(mode), func(t *testing.T) {
			fresh(t)
			ctx := context.Background()
			p := pipelinetest.StartPipeline(t, pipelinetest.Options{Violations: new(consumertest.LogsSink),
				StatusSyncInterval: time.Second, ObservedInterval: time.Second})
			waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)

			send(t, p, cilium(guardedClient, guardedAPI, 8080, flow.OutcomeAllowed))
			var proposal v1alpha1.WorkloadNetworkPolicyProposal
			waitUntil(t, "the api's ingress proposal", 30*time.Second, func() bool {
				return env.Client.Get(ctx, key("guarded", "deployment-api-ingress"), &proposal) == nil
			})
			policy := &v1alpha1.WorkloadNetworkPolicy{}
			t.Cleanup(func() { _ = env.Client.Delete(context.Background(), policy) })
			promote(t, &proposal, mode)
			waitUntil(t, "the policy", 30*time.Second, func() bool {
				return env.Client.Get(ctx, key("guarded", "deployment-api-ingress"), policy) == nil
			})
			promotedAt := v1alpha1.PromotedAt(policy)
			// Kubernetes keeps times to the second: the release must come
			// in a later second than the promotion to be told apart.
			waitUntil(t, "a second after the promotion", 5*time.Second, func() bool {
				return time.Now().Truncate(time.Second).After(promotedAt)
			})
			release := createClientRevision(t, "9f8e7d6c5", "client:2.0", newClientRevision)

			outcome := flow.OutcomeAllowed // monitor: the data plane allows, the spec judges
			if mode == v1alpha1.PolicyModeProtect {
				outcome = flow.OutcomeDenied
			}
			start := time.Now()
			send(t, p, cilium(newClientRevision, guardedAPI, 9090, outcome), cilium(guardedIntruder, guardedAPI, 7070, outcome))
			amendment := &v1alpha1.WorkloadNetworkPolicyProposal{}
			name := policy.Name + "-amendment"
			t.Cleanup(func() {
				if t.Failed() {
					var pol v1alpha1.WorkloadNetworkPolicy
					_ = env.Client.Get(context.Background(), key("guarded", policy.Name), &pol)
					var list v1alpha1.WorkloadNetworkPolicyProposalList
					_ = env.Client.List(context.Background(), &list, client.InNamespace("guarded"))
					var names []string
					for _, i := range list.Items {
						names = append(names, i.Name)
					}
					t.Logf("the amendment: %+v\n%+v\nthe policy's violations: %+v\nproposals: %v", amendment.Spec, amendment.Status, pol.Status.Violations, names)
				}
			})
			waitUntil(t, "the amendment with both edges", 30*time.Second, func() bool {
				return env.Client.Get(ctx, key("guarded", name), amendment) == nil &&
					amendment.Status.Amendment != nil && len(amendment.Status.Amendment.Added) == 2
			})
			t.Logf("%s: the amendment came %s after the flows", mode, time.Since(start).Round(time.Millisecond))

			a := amendment.Status.Amendment
			if a.Policy != policy.Name || amendment.Labels[v1alpha1.AmendsLabel] != policy.Name ||
				!slices.ContainsFunc(amendment.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == policy.UID }) {
				t.Errorf("the amendment does not name its policy: status %q, label %q, owners %+v", a.Policy, amendment.Labels[v1alpha1.AmendsLabel], amendment.OwnerReferences)
			}
			byPort := map[int32]v1alpha1.AmendedEdge{}
			for _, e := range a.Added {
				byPort[e.Port] = e
			}
			released := byPort[9090]
			if released.Origin != v1alpha1.EdgeOriginNewRevision || released.PeerRevision == nil ||
				released.PeerRevision.Name != release.Name || !slices.Equal(released.PeerRevision.Images, []string{"client:2.0"}) {
				t.Errorf("the release's edge: %+v (peer revision %+v), want NewRevision by %s with client:2.0", released, released.PeerRevision, release.Name)
			}
			if old := byPort[7070]; old.Origin != v1alpha1.EdgeOriginLearnedRevision || old.PeerRevision == nil ||
				old.PeerRevision.Name != "intruder-7e8f9a0b1" {
				t.Errorf("the intruder's edge: %+v, want LearnedRevision by intruder-7e8f9a0b1", old)
			}
			if a.NewRevisionEdges != 1 || a.LearnedRevisionEdges != 1 {
				t.Errorf("new %d, learned %d revision edges; want 1 and 1", a.NewRevisionEdges, a.LearnedRevisionEdges)
			}
			if c := meta.FindStatusCondition(amendment.Status.Conditions, v1alpha1.ConditionRevisions); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Revisions condition %+v, want False for the learned revision's edge", c)
			}
			if c := meta.FindStatusCondition(amendment.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
				t.Errorf("Ready %+v, want False", c)
			}
			if got := allowedPorts(amendment.Spec.Kubernetes); got != "7070 8080 9090" {
				t.Errorf("the amendment's spec allows ports %s, want 7070 8080 9090", got)
			}

			// The label merges the amendment into its policy, and the
			// NetworkPolicy follows.
			labelled := time.Now()
			promote(t, amendment, mode)
			waitUntil(t, "the policy grown by the amendment", 30*time.Second, func() bool {
				must(t, env.Client.Get(ctx, key("guarded", policy.Name), policy))
				return allowedPorts(policy.Spec.Kubernetes) == "7070 8080 9090"
			})
			// Monitor mode on the kubernetes backend has no object in the
			// data plane; protect's NetworkPolicy follows the spec.
			native := &networkingv1.NetworkPolicy{}
			if mode == v1alpha1.PolicyModeProtect {
				waitUntil(t, "the NetworkPolicy to allow the release's port", 30*time.Second, func() bool {
					return env.Client.Get(ctx, key("guarded", policy.Name), native) == nil && allowedPorts(&native.Spec) == "7070 8080 9090"
				})
				t.Logf("%s: enforced %s after the label", mode, time.Since(labelled).Round(time.Millisecond))
			}
			waitUntil(t, "the amendment to go", 30*time.Second, func() bool {
				return env.Client.Get(ctx, key("guarded", name), &v1alpha1.WorkloadNetworkPolicyProposal{}) != nil
			})
			waitUntil(t, "revision 2, the amendment", 30*time.Second, func() bool {
				must(t, env.Client.Get(ctx, key("guarded", policy.Name), policy))
				return policy.Annotations[v1alpha1.RevisionAnnotation] == "2" &&
					policy.Annotations[v1alpha1.ChangeCauseAnnotation] == "amendment "+name
			})

			// Rolled back, the policy is as promoted: the release's port
			// is not allowed again, and that is revision 3.
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"1"}}}`, v1alpha1.RollbackToAnnotation)))
			must(t, env.Client.Patch(ctx, policy, patch))
			waitUntil(t, "the rollback", 30*time.Second, func() bool {
				must(t, env.Client.Get(ctx, key("guarded", policy.Name), policy))
				return allowedPorts(policy.Spec.Kubernetes) == "8080" && policy.Annotations[v1alpha1.RevisionAnnotation] == "3"
			})
			if mode == v1alpha1.PolicyModeProtect {
				waitUntil(t, "the NetworkPolicy rolled back", 30*time.Second, func() bool {
					return env.Client.Get(ctx, key("guarded", policy.Name), native) == nil && allowedPorts(&native.Spec) == "8080"
				})
			}
		})
	}
}

// createClientRevision makes a release of guarded/client: a ReplicaSet of
// pod-template-hash hash whose template asks for image, and its pod at
// end's address; both go at the test's end.
func createClientRevision(t *testing.T, hash, image string, end flow.Endpoint) *appsv1.ReplicaSet {
	t.Helper()
	ctx := context.Background()
	var d appsv1.Deployment
	must(t, env.Client.Get(ctx, key("guarded", "client"), &d))
	labels := map[string]string{"app": "client", "pod-template-hash": hash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "guarded", Name: "client-" + hash, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{ServiceAccountName: "client", Containers: []corev1.Container{{Name: "client", Image: image}}}}},
	}
	must(t, env.Client.Create(ctx, rs))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "guarded", Name: end.Pod, GenerateName: rs.Name + "-", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}},
		Spec: rs.Spec.Template.Spec,
	}
	must(t, env.Client.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: end.Address, PodIPs: []corev1.PodIP{{IP: end.Address}}}
	must(t, env.Client.Status().Update(ctx, pod))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		_ = env.Client.Delete(context.Background(), rs)
	})
	return rs
}

// allowedPorts are the ports that a NetworkPolicy spec's rules allow, sorted
// and joined by spaces.
func allowedPorts(k *networkingv1.NetworkPolicySpec) string {
	if k == nil {
		return ""
	}
	var ports []int
	add := func(ps []networkingv1.NetworkPolicyPort) {
		for _, p := range ps {
			if p.Port != nil {
				ports = append(ports, p.Port.IntValue())
			}
		}
	}
	for _, r := range k.Ingress {
		add(r.Ports)
	}
	for _, r := range k.Egress {
		add(r.Ports)
	}
	slices.Sort(ports)
	out := make([]string, 0, len(ports))
	for _, p := range slices.Compact(ports) {
		out = append(out, strconv.Itoa(p))
	}
	return strings.Join(out, " ")
}
