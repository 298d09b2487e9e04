// Package flowsource holds what the streaming flow receivers share: a stream loop
// that re-opens a broken stream with exponential backoff and jitter, and that can be
// started and stopped on a call (only the leader streams), and the receivers' own
// telemetry.
package flowsource

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v7"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// OpenFunc opens one stream and reads it until it ends. It returns whether it
// received anything (a stream that delivered resets the backoff) and why it ended.
// It must return when ctx is done.
type OpenFunc func(ctx context.Context) (received bool, err error)

// Streamer keeps one stream open while started.
type Streamer struct {
	logger *zap.Logger
	cfg    ReconnectConfig
	open   OpenFunc

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewStreamer returns a stopped Streamer.
func NewStreamer(logger *zap.Logger, cfg ReconnectConfig, open OpenFunc) *Streamer {
	return &Streamer{logger: logger, cfg: cfg, open: open}
}

// StartStreaming opens the stream in the background, unless it is already open.
func (s *Streamer) StartStreaming() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.run(ctx, s.done)
}

// StopStreaming closes the stream and returns once it is closed. Records already
// handed on are not recalled.
func (s *Streamer) StopStreaming() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
	s.cancel, s.done = nil, nil
}

func (s *Streamer) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = s.cfg.InitialInterval
	b.MaxInterval = s.cfg.MaxInterval
	b.RandomizationFactor = s.cfg.RandomizationFactor
	b.Multiplier = s.cfg.Multiplier
	b.Reset()
	for {
		received, err := s.open(ctx)
		if ctx.Err() != nil {
			return
		}
		if received {
			b.Reset()
		}
		wait := b.NextBackOff()
		s.logger.Warn("flow stream ended; reconnecting", zap.Error(err), zap.Duration("backoff", wait))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// IsUndecodable reports whether a stream error is a message that arrived whole but
// could not be decoded (truncated or corrupt protobuf), as opposed to a broken
// connection: gRPC reports it as Internal, naming the unmarshal failure. The
// receivers count it as a dropped message before re-opening the stream.
func IsUndecodable(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Internal && strings.Contains(st.Message(), "unmarshal")
}
