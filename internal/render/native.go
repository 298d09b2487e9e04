// Package render renders a WorkloadNetworkPolicy as the native object of its
// backend (a NetworkPolicy, an Istio AuthorizationPolicy, a
// CiliumNetworkPolicy), and keeps the cluster so as a controller (controller.go):
// one code for the render controller, the render subcommand and the review page.
package render

import (
	"context"
	"fmt"
	"sync"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// The native object of a policy, outside the render controller: the render
// subcommand and the review page show what the controller would create, by
// the code that creates it (createdObject), and a proposal as the policy that
// its promotion would create (promotedPolicy).

// Native is the native object that the render controller creates for a policy,
// or why it creates none.
type Native struct {
	// Kind is the backend's kind, such as "NetworkPolicy".
	Kind string
	// Object is the object as the render controller sends it to the API
	// server; nil when the policy's mode asks for none.
	Object client.Object
	// Reason and Message are what the Rendered condition says once the
	// cluster is as the policy asks: the mode, and what it renders.
	Reason, Message string
}

// YAML is the object as YAML, with its apiVersion and kind; nil when there
// is none. An owner reference whose UID is unknown (the policy of a proposal
// is not created yet) is written without one: the API server sets a policy's
// UID when it creates it.
func (n Native) YAML() ([]byte, error) {
	if n.Object == nil {
		return nil, nil
	}
	obj := n.Object.DeepCopyObject().(client.Object)
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		scheme, err := renderScheme()
		if err != nil {
			return nil, err
		}
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	refs, _, _ := unstructured.NestedSlice(content, "metadata", "ownerReferences")
	for _, r := range refs {
		if ref, ok := r.(map[string]any); ok && ref["uid"] == "" {
			delete(ref, "uid")
		}
	}
	if refs != nil {
		if err := unstructured.SetNestedSlice(content, refs, "metadata", "ownerReferences"); err != nil {
			return nil, err
		}
	}
	return yaml.Marshal(content)
}

// PromotedPolicy returns the WorkloadNetworkPolicy that the promotion of
// proposal in mode creates, as the promotion controller sends it.
func PromotedPolicy(proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: proposal.Namespace, Name: proposal.Name,
			Labels: map[string]string{v1alpha1.PromotedFromLabel: proposal.Name},
		},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: *proposal.Spec.DeepCopy(), Mode: mode},
	}
}

// RenderPolicy returns the native object that the render controller creates
// for policy p, reading the addresses of spec.outside's entities from r when
// its backend renders them as addresses and its mode asks for an object; r
// may be nil for a policy that needs none. The owner reference names p by its
// UID as p has it (none for a policy not created yet).
//
// It assumes that the cluster serves the backend's kind: without Istio or
// Cilium the controller renders nothing and says so in the Rendered condition.
func RenderPolicy(ctx context.Context, r client.Reader, p *v1alpha1.WorkloadNetworkPolicy) (Native, error) {
	k, err := backendKind(ctx, r, p)
	if err != nil {
		return Native{}, err
	}
	if k == nil {
		return Native{}, fmt.Errorf("unknown backend %q", p.Spec.Backend)
	}
	scheme, err := renderScheme()
	if err != nil {
		return Native{}, err
	}
	return k.native(p, scheme)
}

// RenderProposal returns the native object that the render controller creates
// for the policy that proposal's promotion in mode creates.
func RenderProposal(ctx context.Context, r client.Reader, proposal *v1alpha1.WorkloadNetworkPolicyProposal, mode v1alpha1.PolicyMode) (Native, error) {
	return RenderPolicy(ctx, r, PromotedPolicy(proposal, mode))
}

// JudgedInSoftware reports whether the flows of policy p are judged against
// its spec by Network Enforcer rather than by the data plane: its backend
// renders no object in p's mode (monitor on kubernetes and cilium, which
// have no per-policy audit mode), so nothing in the data plane says what
// the policy would do. Istio's monitor mode is a dry-run object that
// ztunnel evaluates, and protect mode is enforced, on every backend.
func JudgedInSoftware(p *v1alpha1.WorkloadNetworkPolicy) bool {
	k := kindWith(p.Spec.Backend, nil)
	return k != nil && !k.wanted(p)
}

// renderScheme is the scheme of the enforcer's client, which sets the owner
// reference's apiVersion and kind.
var renderScheme = sync.OnceValues(NewScheme)

// anyKind is a backend's nativeKind, whatever the type of its object.
type anyKind interface {
	// render brings p's native object in line with p (render).
	render(ctx context.Context, r *renderer, p *v1alpha1.WorkloadNetworkPolicy) error
	// wanted reports whether p, in its mode, asks for an object at all.
	wanted(p *v1alpha1.WorkloadNetworkPolicy) bool
	// native returns the object that render creates for p.
	native(p *v1alpha1.WorkloadNetworkPolicy, scheme *runtime.Scheme) (Native, error)
}

type kindOf[T client.Object] struct{ k nativeKind[T] }

func (k kindOf[T]) render(ctx context.Context, r *renderer, p *v1alpha1.WorkloadNetworkPolicy) error {
	return render(ctx, r, p, k.k)
}

func (k kindOf[T]) wanted(p *v1alpha1.WorkloadNetworkPolicy) bool {
	wanted, _, _ := k.k.outcome(p)
	return wanted
}

func (k kindOf[T]) native(p *v1alpha1.WorkloadNetworkPolicy, scheme *runtime.Scheme) (Native, error) {
	wanted, reason, msg := k.k.outcome(p)
	n := Native{Kind: k.k.kind(), Reason: reason, Message: msg}
	if !wanted {
		return n, nil
	}
	obj, err := createdObject(p, k.k, scheme)
	n.Object = obj
	return n, err
}

// backendKind returns the nativeKind of p's backend, with the addresses of
// spec.outside's entities read from r when the backend renders them as
// addresses and p's mode asks for an object; nil for an unknown backend.
func backendKind(ctx context.Context, r client.Reader, p *v1alpha1.WorkloadNetworkPolicy) (anyKind, error) {
	k := kindWith(p.Spec.Backend, nil)
	if k == nil || !usesEntities(p) || !k.wanted(p) {
		return k, nil
	}
	if r == nil {
		return nil, fmt.Errorf("backend %s renders spec.outside's entities as their addresses in the cluster: no cluster to read them from", p.Spec.Backend)
	}
	a, err := readOutsideAddresses(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("backend %s renders spec.outside's entities as their addresses in the cluster: %w", p.Spec.Backend, err)
	}
	return kindWith(p.Spec.Backend, &a), nil
}

// kindWith returns the nativeKind of backend, which renders entities as
// outside; nil for an unknown backend.
func kindWith(backend v1alpha1.Backend, outside *outsideAddresses) anyKind {
	switch backend {
	case v1alpha1.BackendKubernetes:
		return kindOf[*networkingv1.NetworkPolicy]{networkPolicies{outside: outside}}
	case v1alpha1.BackendIstio:
		return kindOf[*securityv1.AuthorizationPolicy]{authorizationPolicies{outside: outside}}
	case v1alpha1.BackendCilium:
		return kindOf[*unstructured.Unstructured]{ciliumNetworkPolicies{}}
	}
	return nil
}

// createdObject returns the object that render creates for policy p, of kind
// k: what p asks for, controlled by p, as it is sent to the API server.
func createdObject[T client.Object](p *v1alpha1.WorkloadNetworkPolicy, k nativeKind[T], scheme *runtime.Scheme) (client.Object, error) {
	want, err := k.desired(p)
	if err != nil {
		return nil, err
	}
	if err := controllerutil.SetControllerReference(p, want, scheme); err != nil {
		return nil, err
	}
	return k.encode(want)
}
