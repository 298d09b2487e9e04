package flowsource

import (
	"time"

	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
)

// KeepaliveTime is how often a flow stream's connection is pinged when quiet.
// configgrpc's default, 10s, is less than the 5 minutes that a gRPC server
// accepts by default: such a server answers the third early ping with GOAWAY
// ("too_many_pings") and the stream breaks every 40 seconds.
const KeepaliveTime = 5 * time.Minute

// NewClientConfig is a flow source's gRPC client configuration: configgrpc's
// defaults, the endpoint, and keepalive pings that a server with gRPC's default
// enforcement accepts. A dead connection is still noticed, within
// KeepaliveTime and the ping timeout.
func NewClientConfig(endpoint string) configgrpc.ClientConfig {
	c := configgrpc.NewDefaultClientConfig()
	c.Endpoint = endpoint
	c.Keepalive = configoptional.Some(configgrpc.KeepaliveClientConfig{Time: KeepaliveTime, Timeout: 20 * time.Second})
	return c
}
