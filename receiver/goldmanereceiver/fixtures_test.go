package goldmanereceiver

import (
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/fakeflows"
	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
)

// loadFixtures reads the shared Goldmane fixture.
func loadFixtures(tb testing.TB) []*pb.FlowResult {
	tb.Helper()
	out, err := fakeflows.LoadGoldmane(filepath.Join("..", "..", fakeflows.GoldmaneFixture))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
