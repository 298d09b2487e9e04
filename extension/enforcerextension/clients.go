package enforcerextension

import (
	"fmt"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// restConfig builds the API server configuration for the auth type.
func restConfig(auth AuthType) (*rest.Config, error) {
	switch auth {
	case AuthTypeServiceAccount:
		return rest.InClusterConfig()
	case AuthTypeKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	return nil, fmt.Errorf("invalid auth_type %q", auth)
}

// newScheme knows the core types, Network Enforcer's and Istio's security types,
// which the istio backend renders. Knowing a type does not watch it: a cluster
// without Istio is fine.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, securityv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}
