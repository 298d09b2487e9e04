// Package grpctest runs a real gRPC server on loopback for tests of the flow
// receivers: with TLS or not, and stoppable and restartable on the same address
// so a test can break a stream and watch the client reconnect.
package grpctest

import (
	"crypto/tls"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Server is a gRPC server on a fixed loopback address.
type Server struct {
	// Addr is the host:port the server listens on, the same across restarts.
	Addr string

	t        testing.TB
	register func(*grpc.Server)
	tls      *tls.Config
	opts     []grpc.ServerOption
	srv      *grpc.Server
}

// Start starts a server that register fills with services, with TLS when
// tlsConfig is not nil. It is stopped when the test ends.
func Start(t testing.TB, tlsConfig *tls.Config, register func(*grpc.Server), opts ...grpc.ServerOption) *Server {
	t.Helper()
	s := &Server{Addr: "127.0.0.1:0", t: t, register: register, tls: tlsConfig, opts: opts}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	lis, err := net.Listen("tcp", s.Addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.Addr = lis.Addr().String()
	opts := append([]grpc.ServerOption{}, s.opts...)
	if s.tls != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.tls)))
	}
	s.srv = grpc.NewServer(opts...)
	s.register(s.srv)
	go func() { _ = s.srv.Serve(lis) }()
}

// Stop stops the server at once, breaking the open streams.
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Stop()
		s.srv = nil
	}
}

// Restart stops the server and starts a new one on the same address.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}
