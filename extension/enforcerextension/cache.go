package enforcerextension

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// indexPolicyTarget indexes policies by "<Kind>/<name>/<Direction>".
const indexPolicyTarget = "spec.targetRef+direction"

// cachedTypes are Network Enforcer's own objects and the native objects it
// renders, which the controller-runtime cache keeps whole: there are few of them,
// and the writer and the reconcilers read them as API objects.
func cachedTypes() []client.Object {
	return []client.Object{&v1alpha1.WorkloadNetworkPolicyProposal{}, &v1alpha1.WorkloadNetworkPolicy{}, &networkingv1.NetworkPolicy{}}
}

func newCache(cfg *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	return cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
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
