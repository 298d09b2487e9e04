package e2e

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"

	// The otlp exporter compresses with gzip by default.
	_ "google.golang.org/grpc/encoding/gzip"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// otlpSink is a real OTLP/gRPC logs receiver that keeps what the binary exports.
type otlpSink struct {
	plogotlp.UnimplementedGRPCServer
	Addr string

	mu      sync.Mutex
	records []plog.LogRecord
}

func startOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &otlpSink{Addr: lis.Addr().String()}
	srv := grpc.NewServer()
	plogotlp.RegisterGRPCServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return s
}

// Export keeps every log record of the request.
func (s *otlpSink) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	flow.EachLogRecord(req.Logs(), func(in plog.LogRecord) {
		lr := plog.NewLogRecord()
		in.CopyTo(lr)
		s.records = append(s.records, lr)
	})
	return plogotlp.NewExportResponse(), nil
}

// Records returns a copy of what arrived so far.
func (s *otlpSink) Records() []plog.LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.LogRecord(nil), s.records...)
}
