package render

import (
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// NewScheme knows the core types, Network Enforcer's and Istio's security types,
// which the istio backend renders. Knowing a type does not watch it: a cluster
// without Istio is fine.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, securityv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
