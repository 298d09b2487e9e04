package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// admissionTimeout bounds the wait for an admission policy to take effect: the API
// server loads a new policy in about half a second, so the tests poll.
const admissionTimeout = 30 * time.Second

// eventuallyRejected retries try until the API server rejects it as Invalid (the
// reason that our ValidatingAdmissionPolicies give) and returns that error. undo runs after each
// attempt that the API server let through, before the policy took effect.
func eventuallyRejected(t *testing.T, try func() error, undo func()) error {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, admissionTimeout, true,
		func(context.Context) (bool, error) {
			last = try()
			switch {
			case last == nil:
				undo()
				return false, nil
			case apierrors.IsInvalid(last):
				return true, nil
			default:
				return false, last
			}
		})
	if err != nil {
		t.Fatalf("not rejected as Invalid: %v (last answer: %v)", err, last)
	}
	return last
}

func TestPromoteLabelMustBeMonitorOrProtect(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()

	bad := newProposal(ns, "typo", kubernetesSpec())
	bad.Labels = map[string]string{v1alpha1.PromoteLabel: "enforce"}
	err := eventuallyRejected(t,
		func() error { return env.Client.Create(ctx, bad.DeepCopy()) },
		func() { _ = env.Client.Delete(ctx, bad.DeepCopy()) })
	want := `label networkenforcer.kubewarden.io/promote must be "monitor" or "protect", not "enforce"`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}

	for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
		p := newProposal(ns, "promote-"+string(mode), kubernetesSpec())
		p.Labels = map[string]string{v1alpha1.PromoteLabel: string(mode)}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("promote=%s rejected: %v", mode, err)
		}
	}

	// Setting the label on an existing proposal goes through the same check.
	p := newProposal(ns, "later", kubernetesSpec())
	if err := env.Client.Create(ctx, p); err != nil {
		t.Fatalf("proposal without the label rejected: %v", err)
	}
	p.Labels = map[string]string{v1alpha1.PromoteLabel: "Protect"}
	if err := env.Client.Update(ctx, p); !apierrors.IsInvalid(err) {
		t.Fatalf("update to promote=Protect: want Invalid, got %v", err)
	}
	p.Labels = map[string]string{v1alpha1.PromoteLabel: string(v1alpha1.PolicyModeProtect), "team": "shop"}
	if err := env.Client.Update(ctx, p); err != nil {
		t.Fatalf("update to promote=protect rejected: %v", err)
	}

	// The rule is about proposals: a policy's labels are the user's own.
	policy := newPolicy(ns, "typo", kubernetesSpec())
	policy.Labels = map[string]string{v1alpha1.PromoteLabel: "enforce"}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatalf("policy with an unrelated label value rejected: %v", err)
	}
}

func TestProposalOwnerCannotChange(t *testing.T) {
	controlplanetest.Require(t)
	ns := newNamespace(t)
	ctx := context.Background()
	web := newDeployment(t, ns, "web")
	api := newDeployment(t, ns, "api")

	owned := func(name string, owner *appsv1.Deployment) *v1alpha1.WorkloadNetworkPolicyProposal {
		p := newProposal(ns, name, kubernetesSpec())
		p.OwnerReferences = []metav1.OwnerReference{ownerRef(owner)}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("creating a proposal with an owner: %v", err)
		}
		return p
	}

	// Wait until the policy is in force, with a change that it must reject.
	probe := owned("probe", web)
	flipOwner := func() error {
		cur := &v1alpha1.WorkloadNetworkPolicyProposal{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(probe), cur); err != nil {
			return err
		}
		other := api
		if cur.OwnerReferences[0].UID == api.UID {
			other = web
		}
		cur.OwnerReferences = []metav1.OwnerReference{ownerRef(other)}
		return env.Client.Update(ctx, cur)
	}
	err := eventuallyRejected(t, flipOwner, func() {})
	want := "metadata.ownerReferences of a WorkloadNetworkPolicyProposal cannot change after creation"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}

	p := owned("web-ingress", web)
	removed := p.DeepCopy()
	removed.OwnerReferences = nil
	if err := env.Client.Update(ctx, removed); !apierrors.IsInvalid(err) {
		t.Fatalf("removing the owner: want Invalid, got %v", err)
	}
	added := p.DeepCopy()
	added.OwnerReferences = append(added.OwnerReferences, ownerRef(api))
	if err := env.Client.Update(ctx, added); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a second owner: want Invalid, got %v", err)
	}

	// Every other change stays allowed: labels, and the spec.
	p.Labels = map[string]string{v1alpha1.PromoteLabel: string(v1alpha1.PolicyModeMonitor)}
	p.Spec.Kubernetes.PodSelector.MatchLabels["tier"] = "backend"
	if err := env.Client.Update(ctx, p); err != nil {
		t.Fatalf("a change that keeps the owner was rejected: %v", err)
	}

	// The garbage collector may remove owner references (kubectl delete
	// --cascade=orphan): it must not be left retrying forever.
	gc, err := env.ClientAs("system:serviceaccount:kube-system:generic-garbage-collector", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	if err := gc.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	p.OwnerReferences = nil
	if err := gc.Update(ctx, p); err != nil {
		t.Fatalf("the garbage collector could not orphan a proposal: %v", err)
	}
}

// newDeployment creates a Deployment with no pods; its uid is what owner
// references point at.
func newDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name}}},
			},
		},
	}
	if err := env.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func ownerRef(d *appsv1.Deployment) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID}
}
