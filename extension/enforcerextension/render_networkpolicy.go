package enforcerextension

import (
	"errors"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// networkPolicies renders the kubernetes backend: in protect mode a NetworkPolicy
// with spec.kubernetes as its spec, which the CNI enforces; in monitor mode none,
// because a NetworkPolicy has no dry run: the flows are judged against
// spec.kubernetes in software instead. A mode change creates or deletes it.
type networkPolicies struct{}

var _ nativeKind[*networkingv1.NetworkPolicy] = networkPolicies{}

func (networkPolicies) kind() string { return "NetworkPolicy" }

func (networkPolicies) empty() *networkingv1.NetworkPolicy { return &networkingv1.NetworkPolicy{} }

func (networkPolicies) outcome(p *v1alpha1.WorkloadNetworkPolicy) (bool, string, string) {
	if p.Spec.Mode != v1alpha1.PolicyModeProtect {
		return false, v1alpha1.ReasonMonitor, "monitor mode: no NetworkPolicy; flows are judged against spec.kubernetes"
	}
	return true, v1alpha1.ReasonProtect, "protect mode: the NetworkPolicy is rendered"
}

func (networkPolicies) desired(p *v1alpha1.WorkloadNetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	if p.Spec.Kubernetes == nil {
		// The CRD's validation refuses this; an error here rather than a
		// panic on the leader if such a policy gets in all the same.
		return nil, errors.New("backend kubernetes without spec.kubernetes")
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		Spec:       *p.Spec.Kubernetes.DeepCopy(),
	}, nil
}

func (networkPolicies) sync(have, want *networkingv1.NetworkPolicy) bool {
	if apiequality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return false
	}
	have.Spec = want.Spec
	return true
}

func (networkPolicies) encode(np *networkingv1.NetworkPolicy) (client.Object, error) { return np, nil }
