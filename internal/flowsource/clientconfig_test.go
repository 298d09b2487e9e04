package flowsource

import (
	"testing"
	"time"
)

// TestClientKeepaliveIsAcceptedByDefaultServers: a gRPC server with the default
// enforcement policy refuses pings more often than every 5 minutes.
func TestClientKeepaliveIsAcceptedByDefaultServers(t *testing.T) {
	c := NewClientConfig("relay:443")
	ka := c.Keepalive.Get()
	if c.Endpoint != "relay:443" || ka == nil || ka.Time < 5*time.Minute || ka.Timeout <= 0 {
		t.Fatalf("client config %+v, keepalive %+v", c, ka)
	}
}
