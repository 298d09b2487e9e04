package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// fresh starts a test on the fixtures' cluster alone: no proposal, policy or
// rendered object in any namespace, whatever the tests before it left. The
// package's tests share one control plane and run in any order (make test
// shuffles them).
func fresh(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var nss corev1.NamespaceList
	must(t, env.Client.List(ctx, &nss))
	kinds := []client.Object{&v1alpha1.WorkloadNetworkPolicyProposal{}, &v1alpha1.WorkloadNetworkPolicy{},
		&networkingv1.NetworkPolicy{}, &securityv1.AuthorizationPolicy{}}
	for _, ns := range nss.Items {
		for _, kind := range kinds {
			must(t, client.IgnoreNotFound(env.Client.DeleteAllOf(ctx, kind, client.InNamespace(ns.Name))))
		}
	}
	// None has a finalizer: each is gone once its delete returns.
	var proposals v1alpha1.WorkloadNetworkPolicyProposalList
	var policies v1alpha1.WorkloadNetworkPolicyList
	must(t, env.Client.List(ctx, &proposals))
	must(t, env.Client.List(ctx, &policies))
	if len(proposals.Items)+len(policies.Items) != 0 {
		t.Fatalf("%d proposals and %d policies left after deleting them all", len(proposals.Items), len(policies.Items))
	}
}

// learnFixtures writes the proposals of the Hubble and Goldmane fixtures, for
// a test that starts from them.
func learnFixtures(t *testing.T) {
	t.Helper()
	p := startPipeline(t, sources{hubble: true, goldmane: true})
	p.Settled(t, learningprocessor.MetricEdges, 2*time.Second)
	p.WaitWritten(t)
	p.Stop(t)
}

// restoreDeployment brings the fixtures' Deployment ns/name back when the test
// ends, with its ReplicaSets and pods, once the garbage collector has removed
// them: for a test that deletes it.
func restoreDeployment(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	var d appsv1.Deployment
	must(t, env.Client.Get(ctx, key(ns, name), &d))
	var sets appsv1.ReplicaSetList
	must(t, env.Client.List(ctx, &sets, client.InNamespace(ns)))
	var pods corev1.PodList
	must(t, env.Client.List(ctx, &pods, client.InNamespace(ns)))
	var ownSets []appsv1.ReplicaSet
	ownPods := map[string][]corev1.Pod{}
	for _, rs := range sets.Items {
		if ownedBy(rs.OwnerReferences, d.UID) {
			ownSets = append(ownSets, rs)
			for _, p := range pods.Items {
				if ownedBy(p.OwnerReferences, rs.UID) {
					ownPods[rs.Name] = append(ownPods[rs.Name], p)
				}
			}
		}
	}
	t.Cleanup(func() {
		waitGone(t, &corev1.Pod{}, ownPodsList(ownPods)...)
		nd := d.DeepCopy()
		clearMeta(&nd.ObjectMeta)
		must(t, env.Client.Create(ctx, nd))
		for _, rs := range ownSets {
			nrs := rs.DeepCopy()
			clearMeta(&nrs.ObjectMeta)
			nrs.OwnerReferences = reown(rs.OwnerReferences, d.UID, nd.UID)
			must(t, env.Client.Create(ctx, nrs))
			for _, p := range ownPods[rs.Name] {
				np := p.DeepCopy()
				clearMeta(&np.ObjectMeta)
				np.OwnerReferences = reown(p.OwnerReferences, rs.UID, nrs.UID)
				status := p.Status
				must(t, env.Client.Create(ctx, np))
				np.Status = status
				must(t, env.Client.Status().Update(ctx, np))
			}
		}
	})
}

// ownPodsList lists the keys of the pods.
func ownPodsList(byRS map[string][]corev1.Pod) []client.ObjectKey {
	var keys []client.ObjectKey
	for _, pods := range byRS {
		for _, p := range pods {
			keys = append(keys, client.ObjectKeyFromObject(&p))
		}
	}
	return keys
}

// waitGone waits until none of the objects of obj's kind named by keys exists.
func waitGone(t *testing.T, obj client.Object, keys ...client.ObjectKey) {
	t.Helper()
	for _, k := range keys {
		var err error
		if !testwait.Try(t, k.String()+" to go", time.Minute, func() bool {
			err = env.Client.Get(context.Background(), k, obj)
			return apierrors.IsNotFound(err)
		}) {
			t.Fatalf("%s still there a minute after its owner was deleted (%v)", k, err)
		}
	}
}

// ownedBy reports whether refs name the owner uid.
func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// reown is refs with the owner old replaced by its new self, uid.
func reown(refs []metav1.OwnerReference, old, uid types.UID) []metav1.OwnerReference {
	out := slices.Clone(refs)
	for i := range out {
		if out[i].UID == old {
			out[i].UID = uid
		}
	}
	return out
}

// clearMeta readies a copy of a deleted object to be created again.
func clearMeta(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.CreationTimestamp, m.ManagedFields, m.Generation = "", "", metav1.Time{}, nil, 0
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil
}
