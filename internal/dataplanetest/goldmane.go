package dataplanetest

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
)

// Goldmane is Goldmane's Flows service serving recorded flows: those whose start
// time is at or after the request's start_time_gte (negative: relative to now),
// then it follows until the client goes away.
type Goldmane struct {
	pb.UnimplementedFlowsServer

	// Opened receives a value each time a stream opens.
	Opened chan struct{}

	mu       sync.Mutex
	flows    []*pb.FlowResult
	requests []*pb.FlowStreamRequest
	live     live[*pb.FlowResult]
}

// NewGoldmane returns a Goldmane that serves flows.
func NewGoldmane(flows []*pb.FlowResult) *Goldmane {
	return &Goldmane{flows: flows, Opened: make(chan struct{}, 64)}
}

// Stream serves one stream.
func (g *Goldmane) Stream(req *pb.FlowStreamRequest, stream pb.Flows_StreamServer) error {
	g.mu.Lock()
	g.requests = append(g.requests, proto.Clone(req).(*pb.FlowStreamRequest))
	flows := g.flows
	pushed, cancel := g.live.subscribe()
	g.mu.Unlock()
	defer cancel()
	select {
	case g.Opened <- struct{}{}:
	default:
	}

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
	return follow(pushed, stream.Context().Done(), stream.Send)
}

// Push sends flows to the open streams, and keeps them for the next ones.
func (g *Goldmane) Push(flows ...*pb.FlowResult) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flows = append(g.flows[:len(g.flows):len(g.flows)], flows...)
	g.live.push(flows...)
}

// SetFlows replaces what the next streams serve.
func (g *Goldmane) SetFlows(flows []*pb.FlowResult) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.flows = flows
}

// Requests returns the requests of every stream so far.
func (g *Goldmane) Requests() []*pb.FlowStreamRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*pb.FlowStreamRequest(nil), g.requests...)
}

// LastRequest returns the request of the newest stream, or nil.
func (g *Goldmane) LastRequest() *pb.FlowStreamRequest {
	reqs := g.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1]
}
