package hubblereceiver

import (
	"slices"
	"strings"
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// worldEgress is the fixture's flow from the cart pod to a world address
// (198.51.100.20:443), with the names that the agent's FQDN cache gives for
// its ends: the fixtures have none.
func worldEgress(tb testing.TB, srcNames, dstNames []string) *flowpb.Flow {
	tb.Helper()
	for _, resp := range loadFixtures(tb) {
		if f := resp.GetFlow(); f.GetIP().GetDestination() == "198.51.100.20" {
			f.SourceNames, f.DestinationNames = srcNames, dstNames
			return f
		}
	}
	tb.Fatal("the fixture has no flow to 198.51.100.20")
	return nil
}

// agentNames are a world address's names as an agent may give them: in any
// case, fully qualified, repeated, and some that no policy can hold.
var agentNames = []string{
	"CDN.example.com.", "api.example.com", "api.example.com.", "*.example.com", "",
	"bad_name.example.com", "a..example.com", "-a.example.com", strings.Repeat("a", 64) + ".example.com",
	strings.Repeat("a.", 126) + "aa",
}

// namedResponses are flows with names for both ends, which the decoder and
// field mask tests decode beside the fixtures.
func namedResponses(tb testing.TB) []*observer.GetFlowsResponse {
	tb.Helper()
	f := worldEgress(tb, []string{"cart.shop.example."}, agentNames)
	return []*observer.GetFlowsResponse{{NodeName: f.GetNodeName(), Time: f.GetTime(),
		ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f}}}
}

// A world destination carries the names that the agent's FQDN cache gives for
// its address, as a policy names them, through the generated code's decoding
// and the receiver's alike.
func TestWorldDestinationNames(t *testing.T) {
	want := []string{"*.example.com", "api.example.com", "cdn.example.com"}
	f := worldEgress(t, nil, agentNames)
	var rec flow.Record
	if reason, ok := convertFlow(f, &rec); !ok {
		t.Fatalf("dropped: %s", reason)
	}
	if rec.Destination.External != flow.ExternalWorld || !slices.Equal(rec.Destination.Names, want) {
		t.Fatalf("destination %+v, want world with names %q", rec.Destination, want)
	}
	if rec.Source.Names != nil {
		t.Fatalf("source names %q, want none", rec.Source.Names)
	}

	wire, err := proto.Marshal(&observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: f}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := fast(&response{dec: newFlowDecoder()}, wire)
	if err != nil || !got.OK || !slices.Equal(got.Record.Destination.Names, want) {
		t.Fatalf("the receiver's decoder: %v %+v, want names %q", err, got, want)
	}
}

// A pod is named by its workload: the names that its address has in the FQDN
// cache are not read.
func TestPodEndNamesAreIgnored(t *testing.T) {
	var rec flow.Record
	if reason, ok := convertFlow(worldEgress(t, []string{"cart.shop.example."}, nil), &rec); !ok {
		t.Fatalf("dropped: %s", reason)
	}
	if rec.Source.Pod == "" || rec.Source.Names != nil || rec.Destination.Names != nil {
		t.Fatalf("source %+v, destination %+v: want a pod source and no names", rec.Source, rec.Destination)
	}
}
