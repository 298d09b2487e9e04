package enforcerextension

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
)

// Config is the configuration of the enforcer extension.
type Config struct {
	// APIConfig is how to reach the Kubernetes API (auth_type).
	k8sconfig.APIConfig `mapstructure:",squash"`

	// LeaderElector names the leader elector whose terms run the writers'
	// controllers, and whose Lease the membership shares keys around.
	LeaderElector component.ID `mapstructure:"leader_elector"`

	// DataPlane is the data plane that enforces the rendered objects (istio,
	// calico or cilium): what it does with peers beyond the workloads is its
	// own, and the previews and monitor verdicts judge as it does. Empty
	// judges by the spec alone, as the Kubernetes API documents it.
	DataPlane netpolmatch.DataPlane `mapstructure:"data_plane"`

	// PodGracePeriod is how long a deleted pod stays resolvable by its name
	// and its addresses, for the flows that arrive after it is gone. A flow
	// known by its address alone and older than this is not attributed.
	PodGracePeriod time.Duration `mapstructure:"pod_grace_period"`

	_ struct{}
}

func createDefaultConfig() component.Config {
	return &Config{
		APIConfig:      k8sconfig.Default(),
		LeaderElector:  leaderelectorextension.DefaultReference(),
		PodGracePeriod: DefaultPodGracePeriod,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	errs := []error{c.APIConfig.Validate(), leaderelectorextension.ValidateReference(c.LeaderElector)}
	switch c.DataPlane {
	case "", netpolmatch.DataPlaneIstio, netpolmatch.DataPlaneCalico, netpolmatch.DataPlaneCilium:
	default:
		errs = append(errs, fmt.Errorf("invalid data_plane %q: must be one of %s, %s, %s", c.DataPlane,
			netpolmatch.DataPlaneIstio, netpolmatch.DataPlaneCalico, netpolmatch.DataPlaneCilium))
	}
	if c.PodGracePeriod <= 0 {
		errs = append(errs, fmt.Errorf("invalid pod_grace_period %s: must be positive", c.PodGracePeriod))
	}
	return errors.Join(errs...)
}
