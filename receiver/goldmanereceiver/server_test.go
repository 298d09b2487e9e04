package goldmanereceiver

import (
	"bufio"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
)

// fixturePath is the shared Goldmane fixture: FlowResult messages in protojson.
var fixturePath = filepath.Join("..", "..", "testdata", "goldmane", "flows.jsonl")

func loadFixtures(t testing.TB) []*pb.FlowResult {
	t.Helper()
	f, err := os.Open(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*pb.FlowResult
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		res := &pb.FlowResult{}
		if err := protojson.Unmarshal(sc.Bytes(), res); err != nil {
			t.Fatalf("fixture line %q: %v", sc.Text(), err)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeGoldmane is Goldmane's Flows service serving recorded flows: those whose start
// time is at or after the request's start_time_gte (negative: relative to now),
// then it follows until the client goes away.
type fakeGoldmane struct {
	pb.UnimplementedFlowsServer

	mu       sync.Mutex
	flows    []*pb.FlowResult
	requests []*pb.FlowStreamRequest
	opened   chan struct{}
}

func newFakeGoldmane(flows []*pb.FlowResult) *fakeGoldmane {
	return &fakeGoldmane{flows: flows, opened: make(chan struct{}, 16)}
}

func (g *fakeGoldmane) Stream(req *pb.FlowStreamRequest, stream pb.Flows_StreamServer) error {
	g.mu.Lock()
	g.requests = append(g.requests, proto.Clone(req).(*pb.FlowStreamRequest))
	flows := g.flows
	g.mu.Unlock()
	g.opened <- struct{}{}

	gte := req.GetStartTimeGte()
	if gte < 0 {
		gte += time.Now().Unix()
	}
	for _, f := range flows {
		if f.GetFlow().GetStartTime() < gte {
			continue
		}
		if err := stream.Send(f); err != nil {
			return err
		}
	}
	<-stream.Context().Done()
	return nil
}

func (g *fakeGoldmane) setFlows(flows []*pb.FlowResult) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flows = flows
}

func (g *fakeGoldmane) lastRequest() *pb.FlowStreamRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.requests) == 0 {
		return nil
	}
	return g.requests[len(g.requests)-1]
}

func (g *fakeGoldmane) streamCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests)
}
