package goldmanereceiver

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// FuzzConvertFlow fuzzes the Goldmane flow conversion, seeded from the fixtures;
// every end that is a pod must also be named.
func FuzzConvertFlow(f *testing.F) {
	var seeds []*pb.Flow
	for _, res := range loadFixtures(f) {
		seeds = append(seeds, res.GetFlow())
	}
	flowsourcetest.FuzzConversion(f, seeds, func() *pb.Flow { return &pb.Flow{} }, convertFlow,
		func(t *testing.T, rec flow.Record) {
			for _, e := range []flow.Endpoint{rec.Source, rec.Destination} {
				if e.External == "" && (e.Pod == "" || e.Namespace == "") {
					t.Fatalf("a pod end without a name: %+v", e)
				}
			}
		})
}
