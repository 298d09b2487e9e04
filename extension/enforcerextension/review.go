package enforcerextension

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// ListProposals returns the proposals in namespace ("" for every namespace)
// from the shared cache, as copies: readers such as the review page serve
// them on every replica without a request to the API server.
func (e *enforcer) ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error) {
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	if err := e.cache.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ListPolicies returns the policies in namespace ("" for every namespace) from
// the shared cache, as copies.
func (e *enforcer) ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error) {
	var list v1alpha1.WorkloadNetworkPolicyList
	if err := e.cache.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}
