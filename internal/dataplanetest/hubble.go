package dataplanetest

import (
	"sync"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/proto"
)

// HubbleRelay is Hubble Relay's Observer service serving recorded responses: those
// at or after the request's since (or the newest `number`), then it follows until
// the client goes away.
type HubbleRelay struct {
	observer.UnimplementedObserverServer

	// Opened receives a value each time a stream opens.
	Opened chan struct{}

	mu        sync.Mutex
	responses []*observer.GetFlowsResponse
	requests  []*observer.GetFlowsRequest
	live      live[*observer.GetFlowsResponse]
}

// NewHubbleRelay returns a relay that serves responses.
func NewHubbleRelay(responses []*observer.GetFlowsResponse) *HubbleRelay {
	return &HubbleRelay{responses: responses, Opened: make(chan struct{}, 64)}
}

// GetFlows serves one stream.
func (r *HubbleRelay) GetFlows(req *observer.GetFlowsRequest, stream observer.Observer_GetFlowsServer) error {
	r.mu.Lock()
	r.requests = append(r.requests, proto.Clone(req).(*observer.GetFlowsRequest))
	responses := r.responses
	pushed, cancel := r.live.subscribe()
	r.mu.Unlock()
	defer cancel()
	select {
	case r.Opened <- struct{}{}:
	default:
	}

	if n := req.GetNumber(); n > 0 && int(n) < len(responses) {
		responses = responses[len(responses)-int(n):]
	}
	for _, resp := range responses {
		if since := req.GetSince(); since != nil && resp.GetTime() != nil && resp.GetTime().AsTime().Before(since.AsTime()) {
			continue
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return follow(pushed, stream.Context().Done(), stream.Send)
}

// Push sends responses to the open streams, and keeps them for the next ones.
func (r *HubbleRelay) Push(responses ...*observer.GetFlowsResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.responses = append(r.responses[:len(r.responses):len(r.responses)], responses...)
	r.live.push(responses...)
}

// SetResponses replaces what the next streams serve.
func (r *HubbleRelay) SetResponses(responses []*observer.GetFlowsResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.responses = responses
}

// Requests returns the requests of every stream so far.
func (r *HubbleRelay) Requests() []*observer.GetFlowsRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*observer.GetFlowsRequest(nil), r.requests...)
}

// LastRequest returns the request of the newest stream, or nil.
func (r *HubbleRelay) LastRequest() *observer.GetFlowsRequest {
	reqs := r.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1]
}
