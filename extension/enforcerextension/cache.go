package enforcerextension

import (
	"context"
	"fmt"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// indexPolicyTarget indexes policies by "<Kind>/<name>/<Direction>".
const indexPolicyTarget = "spec.targetRef+direction"

// cachedTypes are Network Enforcer's own objects and the native objects it
// renders, which the controller-runtime cache keeps whole: there are few of them,
// and the writer and the reconcilers read them as API objects; and the API
// server's EndpointSlices and the Nodes' addresses, which backends without
// entities render spec.outside's as (outside_addresses.go).
// AuthorizationPolicies and CiliumNetworkPolicies are among them only when the
// cluster serves them: a watch on a type that the cluster does not serve
// fails, and a cluster without Istio or Cilium must start all the same.
func cachedTypes(served servedKinds) []client.Object {
	objs := append([]client.Object{&v1alpha1.WorkloadNetworkPolicyProposal{}, &v1alpha1.WorkloadNetworkPolicy{}},
		nativeTypes(served)...)
	return append(objs, outsideTypes()...)
}

// servedKinds says which of the native kinds that not every cluster has the
// cluster served, as discovery said when the collector started.
type servedKinds struct {
	authorizationPolicies, ciliumNetworkPolicies bool
}

// discoverKinds asks discovery which optional native kinds the cluster serves.
func discoverKinds(d discovery.DiscoveryInterface) (servedKinds, error) {
	var s servedKinds
	var err error
	if s.authorizationPolicies, err = servesResource(d, authorizationPolicyResource); err != nil {
		return s, err
	}
	s.ciliumNetworkPolicies, err = servesResource(d, ciliumNetworkPolicyResource)
	return s, err
}

// nativeTypes are the kinds of native object that policies render as, which
// the render controller watches for drift.
func nativeTypes(served servedKinds) []client.Object {
	objs := []client.Object{&networkingv1.NetworkPolicy{}}
	if served.authorizationPolicies {
		objs = append(objs, &securityv1.AuthorizationPolicy{})
	}
	if served.ciliumNetworkPolicies {
		objs = append(objs, ciliumNetworkPolicies{}.empty())
	}
	return objs
}

// authorizationPolicyResource is the resource of Istio's AuthorizationPolicy
// CRD, which the istio backend renders.
var authorizationPolicyResource = securityv1.SchemeGroupVersion.WithResource("authorizationpolicies")

// servesResource reports whether the API server serves resource r, as discovery
// says now: a CRD installed later is seen at the next start.
func servesResource(d discovery.DiscoveryInterface, r schema.GroupVersionResource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(r.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil // the group version is not served at all
	}
	if err != nil {
		return false, fmt.Errorf("discovery of %s: %w", r.GroupVersion(), err)
	}
	for _, res := range list.APIResources {
		if res.Name == r.Resource {
			return true, nil
		}
	}
	return false, nil
}

func newCache(cfg *rest.Config, scheme *runtime.Scheme) (cache.Cache, error) {
	return cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: outsideCacheOptions()})
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
