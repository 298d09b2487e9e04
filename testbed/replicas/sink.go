package replicas

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// ViolationSink is the OTLP/gRPC logs receiver that the leader's events
// exporter sends to (Leader.Sink): it keeps when each violation event
// arrived, with the event's attributes.
type ViolationSink struct {
	plogotlp.UnimplementedGRPCServer
	// Addr is its host:port.
	Addr string

	mu     sync.Mutex
	events []Violation
	// byPort is when the events of each destination port arrived: the
	// harnesses ask by port for every edge while they wait.
	byPort map[int64][]time.Time
	srv    *grpc.Server
}

// Violation is one policy_violation_observed event as the sink received it.
type Violation struct {
	At    time.Time
	Attrs map[string]any
}

// StartViolationSink listens on a free loopback port.
func StartViolationSink() (*ViolationSink, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &ViolationSink{Addr: lis.Addr().String(), srv: grpc.NewServer(), byPort: map[int64][]time.Time{}}
	plogotlp.RegisterGRPCServer(s.srv, s)
	go func() { _ = s.srv.Serve(lis) }()
	return s, nil
}

// Stop stops serving.
func (s *ViolationSink) Stop() { s.srv.Stop() }

// Export keeps the request's violation events.
func (s *ViolationSink) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	flow.EachLogRecord(req.Logs(), func(lr plog.LogRecord) {
		if lr.EventName() == violationevent.Observed {
			v := Violation{At: now, Attrs: lr.Attributes().AsRaw()}
			s.events = append(s.events, v)
			if p, ok := v.Attrs[violationevent.AttrDestinationPort].(int64); ok {
				s.byPort[p] = append(s.byPort[p], now)
			}
		}
	})
	return plogotlp.NewExportResponse(), nil
}

// At is when the events of destination port arrived.
func (s *ViolationSink) At(port uint32) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.byPort[int64(port)])
}

// Events returns every event received so far.
func (s *ViolationSink) Events() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Violation(nil), s.events...)
}
