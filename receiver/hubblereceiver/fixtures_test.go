package hubblereceiver

import (
	"path/filepath"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/fakeflows"
)

// loadFixtures reads the shared Hubble fixture.
func loadFixtures(tb testing.TB) []*observer.GetFlowsResponse {
	tb.Helper()
	out, err := fakeflows.LoadHubble(filepath.Join("..", "..", fakeflows.HubbleFixture))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
