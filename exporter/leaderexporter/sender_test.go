package leaderexporter

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcmetadata "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// answeringLeader is a plaintext OTLP/gRPC logs server on 127.0.0.1 that
// answers every export with answer, and counts the exports it was sent.
type answeringLeader struct {
	plogotlp.UnimplementedGRPCServer
	port int

	mu      sync.Mutex
	answer  *status.Status
	exports int
	// md is the metadata of the last export.
	md grpcmetadata.MD
}

func startAnsweringLeader(t *testing.T) *answeringLeader {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &answeringLeader{port: l.Addr().(*net.TCPAddr).Port}
	srv := grpc.NewServer()
	plogotlp.RegisterGRPCServer(srv, a)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return a
}

func (a *answeringLeader) Export(ctx context.Context, _ plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.exports++
	a.md, _ = grpcmetadata.FromIncomingContext(ctx)
	return plogotlp.NewExportResponse(), a.answer.Err()
}

func (a *answeringLeader) answerWith(st *status.Status) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answer = st
}

func (a *answeringLeader) exported() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exports
}

func (a *answeringLeader) lastMetadata() grpcmetadata.MD {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.md
}

// startSender starts the sender of cfg to the leader on 127.0.0.1.
func startSender(t *testing.T, cfg *Config) *sender {
	t.Helper()
	set := exportertest.NewNopSettings(metadata.Type)
	e, err := newLeaderExporter(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reader := enforcerextensiontest.New()
	reader.SetLeaderAddress("127.0.0.1")
	if err := e.sender.start(context.Background(), reader.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.sender.shutdown(context.Background()) })
	return e.sender
}

// TestLeaderAnswersMapAsTheOTLPExporterDoes: a standby's Unavailable and the
// other transient codes are retried, as is ResourceExhausted with the
// server's RetryInfo; the rest are permanent, and the exporter helper drops
// the batch.
func TestLeaderAnswersMapAsTheOTLPExporterDoes(t *testing.T) {
	leader := startAnsweringLeader(t)
	cfg := createDefaultConfig().(*Config)
	cfg.Port = leader.port
	cfg.TLS.Insecure = true
	s := startSender(t, cfg)

	throttled, err := status.New(codes.ResourceExhausted, "slow down").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		answer    *status.Status
		permanent bool
	}{
		{status.New(codes.OK, ""), false},
		{status.New(codes.Unavailable, "not the leader: send to the leader"), false},
		{status.New(codes.DeadlineExceeded, "answer"), false},
		{status.New(codes.Aborted, "answer"), false},
		{status.New(codes.Canceled, "answer"), false},
		{throttled, false},
		{status.New(codes.ResourceExhausted, "answer"), true}, // without RetryInfo
		{status.New(codes.InvalidArgument, "answer"), true},
		{status.New(codes.Internal, "answer"), true},
		{status.New(codes.Unauthenticated, "answer"), true},
		{status.New(codes.PermissionDenied, "answer"), true},
	}
	for _, tc := range cases {
		leader.answerWith(tc.answer)
		ld, sl := newScope()
		appendCandidate(sl, 1, 0)
		err := s.push(context.Background(), ld)
		switch {
		case tc.answer.Code() == codes.OK:
			if err != nil {
				t.Errorf("an accepted batch: %v", err)
			}
		case err == nil || status.Code(err) != tc.answer.Code() || consumererror.IsPermanent(err) != tc.permanent:
			t.Errorf("%s (%d details): %v, permanent %t; want permanent %t", tc.answer.Code(), len(tc.answer.Details()),
				err, consumererror.IsPermanent(err), tc.permanent)
		}
	}
	if n := leader.exported(); n != len(cases) {
		t.Fatalf("the leader was sent %d exports, want one an answer (%d)", n, len(cases))
	}
}

// TestTheClientSettingsReachTheLeader: the gRPC client settings of the
// configuration are those of each send to the leader: here its headers.
func TestTheClientSettingsReachTheLeader(t *testing.T) {
	leader := startAnsweringLeader(t)
	cfg := createDefaultConfig().(*Config)
	cfg.Port = leader.port
	cfg.TLS.Insecure = true
	cfg.Headers.Set("x-cluster", "east")
	s := startSender(t, cfg)

	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	if err := s.push(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	md := leader.lastMetadata()
	if got := md.Get("x-cluster"); len(got) != 1 || got[0] != "east" {
		t.Errorf("header x-cluster %v, want east", got)
	}
}

// TestTLSIsNotDroppedForPlaintext: with the default tls (no insecure), a
// leader that speaks plaintext is never sent a batch: the handshake fails,
// and the send is tried again rather than sent in the clear.
func TestTLSIsNotDroppedForPlaintext(t *testing.T) {
	leader := startAnsweringLeader(t)
	ca := certtest.NewCA(t, "leader")
	client := ca.Client(t, "reader")
	cfg := createDefaultConfig().(*Config)
	cfg.Port = leader.port
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = ca.CertFile, client.CertFile, client.KeyFile
	cfg.TLS.ServerName = serviceName
	s := startSender(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	err := s.push(ctx, ld)
	if err == nil || consumererror.IsPermanent(err) {
		t.Fatalf("a send over TLS to a plaintext leader at 127.0.0.1:%s: %v; want a retryable failure",
			strconv.Itoa(leader.port), err)
	}
	if n := leader.exported(); n != 0 {
		t.Fatalf("the plaintext leader was sent %d exports", n)
	}
}
