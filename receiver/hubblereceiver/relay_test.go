package hubblereceiver

import (
	"bufio"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// fixturePath is the shared Hubble fixture: `hubble observe -o json` lines.
var fixturePath = filepath.Join("..", "..", "testdata", "hubble", "flows.jsonl")

// loadFixtures decodes every line of the Hubble fixture.
func loadFixtures(t testing.TB) []*observer.GetFlowsResponse {
	t.Helper()
	f, err := os.Open(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*observer.GetFlowsResponse
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		resp := &observer.GetFlowsResponse{}
		if err := protojson.Unmarshal(sc.Bytes(), resp); err != nil {
			t.Fatalf("fixture line %q: %v", sc.Text(), err)
		}
		out = append(out, resp)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeRelay is Hubble Relay's Observer service serving recorded responses: those at
// or after the request's since (or the last `number`), then it follows until the
// client goes away.
type fakeRelay struct {
	observer.UnimplementedObserverServer

	mu        sync.Mutex
	responses []*observer.GetFlowsResponse
	requests  []*observer.GetFlowsRequest
	opened    chan struct{}
}

func newFakeRelay(responses []*observer.GetFlowsResponse) *fakeRelay {
	return &fakeRelay{responses: responses, opened: make(chan struct{}, 16)}
}

func (r *fakeRelay) GetFlows(req *observer.GetFlowsRequest, stream observer.Observer_GetFlowsServer) error {
	r.mu.Lock()
	r.requests = append(r.requests, proto.Clone(req).(*observer.GetFlowsRequest))
	responses := r.responses
	r.mu.Unlock()
	r.opened <- struct{}{}

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
	<-stream.Context().Done()
	return nil
}

// setResponses replaces what the relay serves to the next streams.
func (r *fakeRelay) setResponses(responses []*observer.GetFlowsResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.responses = responses
}

func (r *fakeRelay) lastRequest() *observer.GetFlowsRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) == 0 {
		return nil
	}
	return r.requests[len(r.requests)-1]
}
