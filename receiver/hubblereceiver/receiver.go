package hubblereceiver

import (
	"context"
	"fmt"
	"sync"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// hubbleReceiver streams Observer.GetFlows from Hubble Relay while started.
type hubbleReceiver struct {
	cfg  *Config
	set  receiver.Settings
	next consumer.Logs
	tel  *flowsource.Telemetry

	streamer *flowsource.Streamer
	conn     *grpc.ClientConn
	client   observer.ObserverClient

	// resumeFrom is the time of the newest flow received, so that a re-opened
	// stream continues where the broken one stopped instead of losing the gap.
	mu         sync.Mutex
	resumeFrom time.Time
}

func newHubbleReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*hubbleReceiver, error) {
	tel, err := flowsource.NewTelemetry(set.TelemetrySettings, set.ID)
	if err != nil {
		return nil, err
	}
	r := &hubbleReceiver{cfg: cfg, set: set, next: next, tel: tel}
	r.streamer = flowsource.NewStreamer(set.Logger, cfg.Reconnect, r.stream)
	return r, nil
}

// Start dials Hubble Relay and starts streaming. Dialing is lazy: an unreachable
// relay is retried by the stream loop, not reported as a start failure.
func (r *hubbleReceiver) Start(ctx context.Context, host component.Host) error {
	conn, err := r.cfg.ToClientConn(ctx, host.GetExtensions(), r.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("hubble relay %s: %w", r.cfg.Endpoint, err)
	}
	r.conn, r.client = conn, observer.NewObserverClient(conn)
	r.StartStreaming()
	return nil
}

// Shutdown stops streaming and closes the connection.
func (r *hubbleReceiver) Shutdown(context.Context) error {
	r.StopStreaming()
	if r.conn != nil {
		return r.conn.Close()
	}
	return nil
}

// StartStreaming opens the flow stream; it is a no-op when the stream is open.
func (r *hubbleReceiver) StartStreaming() { r.streamer.StartStreaming() }

// StopStreaming closes the flow stream; the collector keeps running.
func (r *hubbleReceiver) StopStreaming() { r.streamer.StopStreaming() }

// request builds the GetFlows request: on the first open the backfill (the relay's
// buffer), after that from the newest flow already received.
func (r *hubbleReceiver) request() *observer.GetFlowsRequest {
	req := &observer.GetFlowsRequest{Follow: true}
	r.mu.Lock()
	resume := r.resumeFrom
	r.mu.Unlock()
	switch {
	case !resume.IsZero():
		req.Since = timestamppb.New(resume.Add(time.Nanosecond))
	case !r.cfg.Backfill.Enabled:
		req.Since = timestamppb.Now()
	case r.cfg.Backfill.Number > 0:
		req.Number = r.cfg.Backfill.Number
	default:
		req.Since = timestamppb.New(time.Now().Add(-r.cfg.Backfill.Since))
	}
	return req
}

// stream runs one GetFlows stream until it breaks or ctx ends.
func (r *hubbleReceiver) stream(ctx context.Context) (bool, error) {
	stream, err := r.client.GetFlows(ctx, r.request())
	if err != nil {
		return false, err
	}
	received := false
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil && flowsource.IsUndecodable(err) {
				r.tel.Dropped(ctx, flowsource.DropMalformed)
			}
			return received, err
		}
		received = true
		switch {
		case resp.GetFlow() != nil:
			r.handleFlow(ctx, resp.GetFlow())
		case resp.GetLostEvents() != nil:
			lost := resp.GetLostEvents()
			r.tel.Lost(ctx, int64(lost.GetNumEventsLost()))
			r.set.Logger.Warn("Hubble lost flows before sending them",
				zap.Uint64("lost", lost.GetNumEventsLost()), zap.String("source", lost.GetSource().String()))
		}
	}
}

func (r *hubbleReceiver) handleFlow(ctx context.Context, f *flowpb.Flow) {
	if t := f.GetTime(); t != nil {
		r.mu.Lock()
		if ts := t.AsTime(); ts.After(r.resumeFrom) {
			r.resumeFrom = ts
		}
		r.mu.Unlock()
	}
	var rec flow.Record
	if reason, ok := convertFlow(f, &rec); !ok {
		r.tel.Dropped(ctx, reason)
		return
	}
	logs := plog.NewLogs()
	rec.AppendTo(logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	if err := r.next.ConsumeLogs(ctx, logs); err != nil {
		r.set.Logger.Error("the pipeline refused a flow record", zap.Error(err))
		return
	}
	r.tel.Accepted(ctx, 1)
}
