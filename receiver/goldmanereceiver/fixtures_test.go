package goldmanereceiver

import (
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// loadFixtures reads the shared Goldmane fixture.
func loadFixtures(tb testing.TB) []*pb.FlowResult {
	tb.Helper()
	out, err := dataplanetest.LoadGoldmane(filepath.Join("..", "..", dataplanetest.GoldmaneFixture))
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
