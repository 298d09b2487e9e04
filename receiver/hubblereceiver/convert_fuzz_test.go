package hubblereceiver

import (
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"

	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// FuzzConvertFlow fuzzes the Hubble flow conversion and the merge of a
// connection's events, seeded from the fixtures, flows with names for their
// ends and a real agent's flows.
func FuzzConvertFlow(f *testing.F) {
	var seeds []*flowpb.Flow
	for _, resp := range append(loadFixtures(f), namedResponses(f)...) {
		if fl := resp.GetFlow(); fl != nil {
			seeds = append(seeds, fl)
		}
	}
	for _, name := range realAgentRecordings {
		seeds = append(seeds, loadRealAgent(f, name)...)
	}
	conns := newConnections()
	flowsourcetest.FuzzConversion(f, seeds, func() *flowpb.Flow { return &flowpb.Flow{} }, conns.convert, nil)
}
