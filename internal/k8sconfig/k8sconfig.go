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

// RestConfig builds the API server configuration for the auth type, with
// client-go's own rate limit off (unthrottled).
func RestConfig(c APIConfig) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch c.AuthType {
	case AuthTypeServiceAccount:
		cfg, err = rest.InClusterConfig()
	case AuthTypeKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	default:
		return nil, c.Validate()
	}
	if err != nil {
		return nil, err
	}
	return unthrottled(cfg), nil
}

// unthrottled turns off client-go's client-side rate limit of cfg, unless it
// sets one. Left at zero, client-go limits each API group and kind's client to
// 5 requests a second (burst 10): the proposal writer's reads and writes of
// proposals, whose own limit is write_qps, would stop at that. The API server
// shares its capacity by API Priority and Fairness (the chart's FlowSchema and
// PriorityLevelConfiguration for the enforcer), and the writers bound their
// own writes; controller-runtime's GetConfig does the same.
func unthrottled(cfg *rest.Config) *rest.Config {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}
