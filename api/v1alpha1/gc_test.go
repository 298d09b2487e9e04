package v1alpha1_test

import (
	"context"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// gcTimeout bounds the wait for the garbage collector, which removes an owned
// object within about half a second of its owner once its informers have synced.
const gcTimeout = 60 * time.Second

// waitGone polls until obj no longer exists.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, gcTimeout, true,
		func(ctx context.Context) (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	if err != nil {
		t.Fatalf("%T %s was not garbage-collected: %v", obj, obj.GetName(), err)
	}
}

// "Back to learning": deleting a policy deletes the native object it owns.
func TestNativeObjectGoesWithItsPolicy(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	policy := newPolicy(ns, "deployment-web-ingress", kubernetesSpec())
	policy.Spec.Mode = v1alpha1.PolicyModeProtect
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	native := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      policy.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1alpha1.GroupVersion.String(),
				Kind:               "WorkloadNetworkPolicy",
				Name:               policy.Name,
				UID:                policy.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *policy.Spec.Kubernetes,
	}
	if err := env.Client.Create(ctx, native); err != nil {
		t.Fatal(err)
	}
	// An object without the owner reference is the user's and must stay.
	unowned := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hand-made"},
		Spec:       *policy.Spec.Kubernetes,
	}
	if err := env.Client.Create(ctx, unowned); err != nil {
		t.Fatal(err)
	}

	if err := env.Client.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	waitGone(t, native)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unowned), unowned); err != nil {
		t.Fatalf("an object the policy did not own was touched: %v", err)
	}
}

// A proposal is owned by its workload, so Kubernetes deletes it with the workload.
func TestProposalGoesWithItsWorkload(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	web := newDeployment(t, ns, "web")
	proposal := newProposal(ns, "deployment-web-ingress", kubernetesSpec())
	proposal.OwnerReferences = []metav1.OwnerReference{ownerRef(web)}
	if err := env.Client.Create(ctx, proposal); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, web, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, proposal)
}
