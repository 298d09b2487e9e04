package hubblereceiver

import (
	"path/filepath"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// loadFixtures reads the shared Hubble fixture.
func loadFixtures(tb testing.TB) []*observer.GetFlowsResponse {
	tb.Helper()
	out, err := dataplanetest.LoadHubble(filepath.Join("..", "..", dataplanetest.HubbleFixture))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
