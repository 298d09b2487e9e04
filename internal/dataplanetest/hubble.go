package dataplanetest

import (
	"sync"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"github.com/cilium/cilium/pkg/hubble/parser/fieldmask"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// HubbleRelay is Hubble Relay's Observer service serving recorded responses: those
// at or after the request's since (or the newest `number`), then it follows until
// the client goes away. It honours the request's field_mask as a Cilium agent's
// observer does (the relay hands the mask on to each agent).
type HubbleRelay struct {
	observer.UnimplementedObserverServer

	// Opened receives a value each time a stream opens.
	Opened chan struct{}

	mu        sync.Mutex
	responses []*observer.GetFlowsResponse
	requests  []*observer.GetFlowsRequest
	live      live[*observer.GetFlowsResponse]
	// retain bounds the responses kept for later streams; 0: no bound.
	retain int
}

// NewHubbleRelay returns a relay that serves responses.
func NewHubbleRelay(responses []*observer.GetFlowsResponse) *HubbleRelay {
	return &HubbleRelay{responses: responses, Opened: make(chan struct{}, 64)}
}

// GetFlows serves one stream.
func (r *HubbleRelay) GetFlows(req *observer.GetFlowsRequest, stream observer.Observer_GetFlowsServer) error {
	// The agent checks the mask before it sends anything; fieldmask.New also
	// normalizes the request's mask, so the request is kept before.
	r.mu.Lock()
	r.requests = append(r.requests, proto.Clone(req).(*observer.GetFlowsRequest))
	r.mu.Unlock()
	mask, err := fieldmask.New(req.GetFieldMask())
	if err != nil {
		return err
	}
	send := stream.Send
	if mask.Active() {
		send = masked(mask, stream.Send)
	}
	r.mu.Lock()
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
		if err := send(resp); err != nil {
			return err
		}
	}
	return follow(pushed, stream.Context().Done(), func(resp *observer.GetFlowsResponse) error {
		if resp == nil { // Break
			return status.Error(codes.Unavailable, "the stream was broken")
		}
		return send(resp)
	})
}

// Break ends every open stream with an error, as a server that goes away
// does; the streams opened after it are served as before.
func (r *HubbleRelay) Break() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live.push(nil)
}

// masked wraps send so that each flow goes out with only the fields of mask,
// as in Cilium's local observer (pkg/hubble/observer): one Flow for the
// stream, its nested messages allocated once, into which each flow's masked
// fields are copied before it is sent; the response's time and node name are
// then the masked flow's, empty when the mask leaves them out. Other responses
// (node status, lost events) go out as they are. Reusing the Flow is safe
// because Send has marshalled it when it returns; it also keeps the agent's
// quirk that a oneof variant in the mask (l4.TCP) that a flow does not have
// keeps the previous flow's value.
func masked(mask fieldmask.FieldMask, send func(*observer.GetFlowsResponse) error) func(*observer.GetFlowsResponse) error {
	flow := new(flowpb.Flow)
	mask.Alloc(flow.ProtoReflect())
	return func(resp *observer.GetFlowsResponse) error {
		f := resp.GetFlow()
		if f == nil {
			return send(resp)
		}
		mask.Copy(flow.ProtoReflect(), f.ProtoReflect())
		return send(&observer.GetFlowsResponse{Time: flow.GetTime(), NodeName: flow.GetNodeName(),
			ResponseTypes: &observer.GetFlowsResponse_Flow{Flow: flow}})
	}
}

// Push sends responses to the open streams, and keeps them for the next ones.
func (r *HubbleRelay) Push(responses ...*observer.GetFlowsResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.responses = append(r.responses[:len(r.responses):len(r.responses)], responses...)
	// Past twice the bound, the newest retain are copied to a slice of their
	// own, so that the older ones can go and a push costs O(1) on average.
	if r.retain > 0 && len(r.responses) > 2*r.retain {
		r.responses = append([]*observer.GetFlowsResponse(nil), r.responses[len(r.responses)-r.retain:]...)
	}
	r.live.push(responses...)
}

// SetRetain bounds the responses kept for the streams that open later to
// about the newest n (between n and 2n), as an agent's ring buffer does; 0
// keeps them all.
func (r *HubbleRelay) SetRetain(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retain = n
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
