package enforcerextension

import (
	"fmt"

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

// newScheme knows the core types and Network Enforcer's.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
