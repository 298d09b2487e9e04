package enforcerextension

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/render"
)

// indexPolicyTarget indexes policies by "<Kind>/<name>/<Direction>".
const indexPolicyTarget = "spec.targetRef+direction"

// cachedTypes are Network Enforcer's own objects and the native objects it
// renders, which the controller-runtime cache keeps whole: there are few of them,
// and the writer and the reconcilers read them as API objects; and the API
// server's EndpointSlices and the Nodes' addresses, which backends without
// entities render spec.outside's as (internal/render/outside_addresses.go).
// AuthorizationPolicies and CiliumNetworkPolicies are among them only when the
// cluster serves them: a watch on a type that the cluster does not serve
// fails, and a cluster without Istio or Cilium must start all the same.
func cachedTypes(served render.ServedKinds) []client.Object {
	objs := append([]client.Object{&v1alpha1.WorkloadNetworkPolicyProposal{}, &v1alpha1.WorkloadNetworkPolicy{}},
		render.NativeTypes(served)...)
	return append(objs, render.OutsideTypes()...)
}

// newCache makes the shared cache. It keeps no managed fields, but of a
// policy the mark that an earlier version's status update left, which the
// status writers take over (apiwrite).
func newCache(cfg *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	byObject := render.CacheOptions()
	byObject[&v1alpha1.WorkloadNetworkPolicy{}] = cache.ByObject{Transform: apiwrite.StripManagedFieldsButLegacy}
	return cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: byObject})
}

// addIndexes registers the cache's field indexes; they must exist before the
// cache starts.
func addIndexes(ctx context.Context, c cache.Cache) error {
	if err := c.IndexField(ctx, &v1alpha1.WorkloadNetworkPolicy{}, indexPolicyTarget, func(o client.Object) []string {
		p := o.(*v1alpha1.WorkloadNetworkPolicy)
		return []string{policyTargetKey(p.Spec.TargetRef.Kind, p.Spec.TargetRef.Name, p.Spec.Direction)}
	}); err != nil {
		return fmt.Errorf("policy target index: %w", err)
	}
	return nil
}

func policyTargetKey(kind v1alpha1.WorkloadKind, name string, d v1alpha1.Direction) string {
	return string(kind) + "/" + name + "/" + string(d)
}
