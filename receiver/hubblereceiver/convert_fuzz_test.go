package hubblereceiver

import (
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"

	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// FuzzConvertFlow fuzzes the Hubble flow conversion, seeded from the fixtures.
func FuzzConvertFlow(f *testing.F) {
	var seeds []*flowpb.Flow
	for _, resp := range loadFixtures(f) {
		if fl := resp.GetFlow(); fl != nil {
			seeds = append(seeds, fl)
		}
	}
	flowsourcetest.FuzzConversion(f, seeds, func() *flowpb.Flow { return &flowpb.Flow{} }, convertFlow, nil)
}
