// Package k8sconfig holds the Kubernetes client settings that every component
// of the distribution shares, as opentelemetry-collector-contrib's
// internal/k8sconfig does: a component embeds APIConfig in its config with
// `mapstructure:",squash"`, so that `auth_type` reads and validates alike
// everywhere, and builds its clients' rest.Config with RestConfig.
package k8sconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AuthType says how a component authenticates to the Kubernetes API.
type AuthType string

const (
	// AuthTypeServiceAccount uses the pod's service account (in-cluster config).
	AuthTypeServiceAccount AuthType = "serviceAccount"
	// AuthTypeKubeConfig uses the kubeconfig named by $KUBECONFIG, or ~/.kube/config.
	AuthTypeKubeConfig AuthType = "kubeConfig"
)

// APIConfig is how a component reaches the Kubernetes API.
type APIConfig struct {
	// AuthType is how to reach the Kubernetes API: serviceAccount or kubeConfig.
	AuthType AuthType `mapstructure:"auth_type"`
}

// Default is the settings of a component in a pod: its service account.
func Default() APIConfig { return APIConfig{AuthType: AuthTypeServiceAccount} }

// Validate checks the auth type.
func (c APIConfig) Validate() error {
	switch c.AuthType {
	case AuthTypeServiceAccount, AuthTypeKubeConfig:
		return nil
	}
	return fmt.Errorf("invalid auth_type %q: must be one of %s, %s", c.AuthType, AuthTypeServiceAccount, AuthTypeKubeConfig)
}

// RestConfig builds the API server configuration for the auth type.
func RestConfig(c APIConfig) (*rest.Config, error) {
	switch c.AuthType {
	case AuthTypeServiceAccount:
		return rest.InClusterConfig()
	case AuthTypeKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	}
	return nil, c.Validate()
}
