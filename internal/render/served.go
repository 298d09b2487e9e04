package render

import (
	"fmt"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServedKinds says which of the native kinds that not every cluster has the
// cluster served, as discovery said when the collector started.
type ServedKinds struct {
	AuthorizationPolicies, CiliumNetworkPolicies bool
}

// DiscoverKinds asks discovery which optional native kinds the cluster serves.
func DiscoverKinds(d discovery.DiscoveryInterface) (ServedKinds, error) {
	var s ServedKinds
	var err error
	if s.AuthorizationPolicies, err = servesResource(d, AuthorizationPolicyResource); err != nil {
		return s, err
	}
	s.CiliumNetworkPolicies, err = servesResource(d, CiliumNetworkPolicyResource)
	return s, err
}

// NativeTypes are the kinds of native object that policies render as, which
// the render controller watches for drift.
func NativeTypes(served ServedKinds) []client.Object {
	objs := []client.Object{&networkingv1.NetworkPolicy{}}
	if served.AuthorizationPolicies {
		objs = append(objs, &securityv1.AuthorizationPolicy{})
	}
	if served.CiliumNetworkPolicies {
		objs = append(objs, ciliumNetworkPolicies{}.empty())
	}
	return objs
}

// AuthorizationPolicyResource is the resource of Istio's AuthorizationPolicy
// CRD, which the istio backend renders.
var AuthorizationPolicyResource = securityv1.SchemeGroupVersion.WithResource("authorizationpolicies")

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
