package k8swriterexporter

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var orders = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "orders"}

// cartIngressPolicy is cart's ingress policy, promoted at promoted: it
// allows frontend on 8080 and orders on 9000, and its status marks the
// second rule unused.
func cartIngressPolicy(promoted time.Time) *v1alpha1.WorkloadNetworkPolicy {
	rule := func(app string, port int32) networkingv1.NetworkPolicyIngressRule {
		return networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceLabel: "shop"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
		}
	}
	lastUsed := metav1.NewTime(promoted.Add(-10 * 24 * time.Hour))
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: cartIngress.Name, UID: "policy-uid", Generation: 3,
			Annotations: map[string]string{v1alpha1.PromotedAtAnnotation: promoted.UTC().Format(time.RFC3339)}},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{Mode: v1alpha1.PolicyModeProtect, PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"},
			Kubernetes: &networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{rule("frontend", 8080), rule("orders", 9000)},
			},
		}},
		Status: v1alpha1.WorkloadNetworkPolicyStatus{RuleUse: []v1alpha1.RuleUse{
			{Rule: "ingress[0]", Flows: 40, LastUsed: &metav1.Time{Time: promoted}},
			{Rule: "ingress[1]", Flows: 2, LastUsed: &lastUsed, Unused: true},
		}},
	}
}

// amend hands the writer amendment edges of cart's ingress policy.
func amend(t *testing.T, w *writer, edges ...learning.Amendment) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range edges {
		edges[i].AppendTo(sl)
	}
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// amendmentEdge is an edge into cart from peer on port that cart's policy
// does not allow, made by the revisions named.
func amendmentEdge(peer workload.Ref, port uint32, targetRevision, peerRevision string, at time.Time) learning.Amendment {
	return learning.Amendment{Observation: learning.Observation{Edge: learning.Edge{Backend: v1alpha1.BackendKubernetes,
		Workload: cart, Direction: v1alpha1.DirectionIngress, Peer: peer, Protocol: "tcp", Port: port},
		Class: v1alpha1.PeerClassWorkload, Flows: 1, Time: at}, Policy: cartIngress.Name,
		TargetRevision: targetRevision, PeerRevision: peerRevision}
}

// TestAmendmentOfAPolicy: the writer writes a policy's amendment as a
// proposal that names the policy and is owned by it: the policy's spec with
// the learned edges added and the rule that its status marks unused left
// out. Each added edge names the revisions that made it and its origin: a
// client's release after the promotion is NewRevision, a client that was
// live before it LearnedRevision, which keeps Revisions and Ready False.
// Built on one generation of the policy, it is built again when the policy
// changes, and a promote label set on the old one goes.
func TestAmendmentOfAPolicy(t *testing.T) {
	w, fake := startWriter(t)
	promoted := time.Now().Add(-time.Hour).Truncate(time.Second)
	fake.AddWorkload(orders, enforcerextensiontest.WorkloadInfo{UID: "orders-uid",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}}})
	fake.SetPodRevision("shop", "frontend-7d9f8-abcde", workload.Revision{Workload: frontend, Name: "frontend-7d9f8",
		Hash: "7d9f8", Created: promoted.Add(30 * time.Minute), Images: []string{"frontend:2.0"}})
	fake.SetPodRevision("shop", "orders-5b6c7-fghij", workload.Revision{Workload: orders, Name: "orders-5b6c7",
		Hash: "5b6c7", Created: promoted.Add(-48 * time.Hour), Images: []string{"orders:1.4"}})
	fake.SetPodRevision("shop", "cart-3a4b5-klmno", workload.Revision{Workload: cart, Name: "cart-3a4b5",
		Hash: "3a4b5", Created: promoted.Add(-72 * time.Hour), Images: []string{"cart:1.0"}})
	pol := cartIngressPolicy(promoted)
	fake.SetPolicy(pol)
	fake.Lead()

	now := time.Now()
	amend(t, w, amendmentEdge(frontend, 8443, "cart-3a4b5", "frontend-7d9f8", now),
		amendmentEdge(orders, 9100, "cart-3a4b5", "orders-5b6c7", now.Add(time.Second)))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 {
		t.Fatalf("%d proposals, want the amendment alone", len(got))
	}
	a := got[0]
	if a.Name != "deployment-cart-ingress-amendment" || a.Labels[v1alpha1.AmendsLabel] != pol.Name ||
		a.Annotations[v1alpha1.AmendsGenerationAnnotation] != "3" ||
		len(a.OwnerReferences) != 1 || a.OwnerReferences[0].UID != pol.UID || a.OwnerReferences[0].Kind != "WorkloadNetworkPolicy" {
		t.Fatalf("the amendment's metadata: %s %+v %+v %+v", a.Name, a.Labels, a.Annotations, a.OwnerReferences)
	}
	var rules []string
	for _, r := range a.Spec.Kubernetes.Ingress {
		for _, p := range r.Ports {
			rules = append(rules, r.From[0].PodSelector.MatchLabels["app"]+":"+p.Port.String())
		}
	}
	slices.Sort(rules)
	if want := []string{"frontend:8080", "frontend:8443", "orders:9100"}; !slices.Equal(rules, want) {
		t.Errorf("the amendment allows %v, want %v (orders:9000 is unused)", rules, want)
	}
	st := a.Status.Amendment
	if st == nil || st.Policy != pol.Name || !st.Since.Time.Equal(promoted) {
		t.Fatalf("status.amendment %+v", st)
	}
	if len(st.Removed) != 1 || st.Removed[0].Rule != "ingress[1]" || st.Removed[0].LastUsed == nil {
		t.Errorf("removed %+v, want ingress[1] with its last use", st.Removed)
	}
	if len(st.Added) != 2 {
		t.Fatalf("added %+v", st.Added)
	}
	release, old := st.Added[0], st.Added[1]
	if release.Port != 8443 || release.Origin != v1alpha1.EdgeOriginNewRevision || release.PeerRevision == nil ||
		release.PeerRevision.Name != "frontend-7d9f8" || !slices.Equal(release.PeerRevision.Images, []string{"frontend:2.0"}) ||
		release.TargetRevision == nil || release.TargetRevision.Name != "cart-3a4b5" {
		t.Errorf("the release's edge %+v (revisions %+v, %+v)", release, release.TargetRevision, release.PeerRevision)
	}
	if old.Port != 9100 || old.Origin != v1alpha1.EdgeOriginLearnedRevision || old.PeerRevision == nil || old.PeerRevision.Name != "orders-5b6c7" {
		t.Errorf("the old client's edge %+v", old)
	}
	if st.NewRevisionEdges != 1 || st.LearnedRevisionEdges != 1 {
		t.Errorf("%d new, %d learned revision edges", st.NewRevisionEdges, st.LearnedRevisionEdges)
	}
	assertCondition(t, a, v1alpha1.ConditionRevisions, metav1.ConditionFalse, v1alpha1.ReasonLearnedRevision)
	assertCondition(t, a, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotStable)

	// A person labels it, then edits the policy: the amendment is built
	// again on the policy as it is, and waits for a new label.
	a.Labels[v1alpha1.PromoteLabel] = "protect"
	fake.SetProposal(a)
	edited := pol.DeepCopy()
	edited.Generation = 4
	edited.Spec.Kubernetes.Ingress = edited.Spec.Kubernetes.Ingress[:1]
	edited.Status.RuleUse = edited.Status.RuleUse[:1]
	fake.SetPolicy(edited)
	amend(t, w, amendmentEdge(frontend, 8444, "cart-3a4b5", "frontend-7d9f8", now.Add(2*time.Second)))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	a = fake.Proposals()[0]
	if a.Annotations[v1alpha1.AmendsGenerationAnnotation] != "4" || a.Labels[v1alpha1.PromoteLabel] != "" {
		t.Errorf("rebuilt on generation %s with labels %v, want 4 without the promote label", a.Annotations[v1alpha1.AmendsGenerationAnnotation], a.Labels)
	}
	if n := len(a.Status.Amendment.Added); n != 3 || len(a.Status.Amendment.Removed) != 0 {
		t.Errorf("%d added, %d removed, want 3 and 0", n, len(a.Status.Amendment.Removed))
	}
}
