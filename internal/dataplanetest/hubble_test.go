package dataplanetest

import (
	"context"
	"errors"
	"io"
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/kubewarden/network-enforcer/internal/grpctest"
)

// TestRelayAppliesTheFieldMask holds the relay to a Cilium agent's handling
// of GetFlowsRequest.field_mask: a masked request gets each flow with only the
// fields of the mask (its time and node name with them), other responses as
// they are; an unmasked request gets the flows whole.
func TestRelayAppliesTheFieldMask(t *testing.T) {
	client := End{Namespace: "shop", Pod: "web-0", IP: "10.0.0.1", Workload: "web", Identity: 1001}
	server := End{Namespace: "shop", Pod: "db-0", IP: "10.0.0.2", Workload: "db", Identity: 1002}
	served := append(NewHubbleConnection(client, server, 40000, 5432, ConnectionAllowed),
		NewHubbleConnection(client, server, 40001, 5432, ConnectionDenied)...)
	lost := &observer.GetFlowsResponse{ResponseTypes: &observer.GetFlowsResponse_LostEvents{
		LostEvents: &flowpb.LostEvent{Source: flowpb.LostEventSource_HUBBLE_RING_BUFFER, NumEventsLost: 3}}}
	served = append(served, lost)
	relay := NewHubbleRelay(served)

	paths := []string{"time", "verdict", "IP.source", "l4.TCP.destination_port", "source.namespace", "event_type"}
	got := getFlows(t, relay, &observer.GetFlowsRequest{FieldMask: &fieldmaskpb.FieldMask{Paths: paths}}, len(served))
	for i, resp := range got {
		src := served[i]
		f := src.GetFlow()
		if f == nil {
			if !proto.Equal(resp, src) {
				t.Errorf("response %d, not a flow, changed: got %v, want %v", i, resp, src)
			}
			continue
		}
		want := &observer.GetFlowsResponse{Time: f.GetTime(), ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: &flowpb.Flow{
			Time:      f.GetTime(),
			Verdict:   f.GetVerdict(),
			IP:        &flowpb.IP{Source: f.GetIP().GetSource()},
			L4:        &flowpb.Layer4{Protocol: &flowpb.Layer4_TCP{TCP: &flowpb.TCP{DestinationPort: f.GetL4().GetTCP().GetDestinationPort()}}},
			Source:    &flowpb.Endpoint{Namespace: f.GetSource().GetNamespace()},
			EventType: f.GetEventType(),
		}}}
		if !proto.Equal(resp, want) {
			t.Errorf("flow %d with mask %v:\n got  %v\n want %v", i, paths, resp, want)
		}
	}

	got = getFlows(t, relay, &observer.GetFlowsRequest{}, len(served))
	for i, resp := range got {
		if !proto.Equal(resp, served[i]) {
			t.Errorf("response %d without a mask: got %v, want %v", i, resp, served[i])
		}
	}
}

// TestRelayRefusesAnInvalidFieldMask: a mask that names no field of Flow ends
// the stream with an error before any flow, as the agent's does.
func TestRelayRefusesAnInvalidFieldMask(t *testing.T) {
	relay := NewHubbleRelay(NewHubbleConnection(End{Pod: "a", IP: "10.0.0.1"}, End{Pod: "b", IP: "10.0.0.2"}, 40000, 80, ConnectionAllowed))
	stream := openFlows(t, relay, &observer.GetFlowsRequest{FieldMask: &fieldmaskpb.FieldMask{Paths: []string{"verdict", "no_such_field"}}})
	resp, err := stream.Recv()
	if err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("an invalid field mask: got %v, %v; want an error", resp, err)
	}
	if n := len(relay.Requests()); n != 1 {
		t.Fatalf("the relay kept %d requests, want 1", n)
	}
}

// getFlows reads n responses of a stream of req from relay.
func getFlows(t *testing.T, relay *HubbleRelay, req *observer.GetFlowsRequest, n int) []*observer.GetFlowsResponse {
	t.Helper()
	stream := openFlows(t, relay, req)
	out := make([]*observer.GetFlowsResponse, 0, n)
	for range n {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("response %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, resp)
	}
	return out
}

// openFlows opens a GetFlows stream of req on a real gRPC server of relay:
// the masked flow is reused between sends, which only a server that
// marshals each message shows to be safe.
func openFlows(t *testing.T, relay *HubbleRelay, req *observer.GetFlowsRequest) observer.Observer_GetFlowsClient {
	t.Helper()
	srv := grpctest.Start(t, nil, func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) })
	conn, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := observer.NewObserverClient(conn).GetFlows(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}
