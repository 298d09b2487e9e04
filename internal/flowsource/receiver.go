package flowsource

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/reconnect"
)

// GRPCReceiver is what the gRPC flow receivers share: the connection to the data
// plane's service, the stream loop, the hand-off of records to the pipeline and
// the counters. A receiver embeds it and supplies the stream itself.
type GRPCReceiver struct {
	Settings  receiver.Settings
	Telemetry *Telemetry

	client   *configgrpc.ClientConfig
	next     consumer.Logs
	streamer *Streamer
	conn     *grpc.ClientConn
	dialed   func(*grpc.ClientConn)

	// leader names the enforcer extension whose leadership gates streaming; nil
	// streams from start to shutdown.
	leader *component.ID
	mu     sync.Mutex
	closed bool
}

// StreamWhileLeading makes the receiver stream only while the enforcer extension
// id leads, so that a standby replica reads no flows; a nil id streams always.
func (r *GRPCReceiver) StreamWhileLeading(id *component.ID) { r.leader = id }

// NewGRPCReceiver prepares a receiver. dialed receives the connection at Start, to
// build the service client from; open runs one stream on it.
func NewGRPCReceiver(set receiver.Settings, client *configgrpc.ClientConfig, backoff reconnect.Config,
	next consumer.Logs, dialed func(*grpc.ClientConn), open OpenFunc,
) (*GRPCReceiver, error) {
	tel, err := NewTelemetry(set.TelemetrySettings, set.ID)
	if err != nil {
		return nil, err
	}
	r := &GRPCReceiver{Settings: set, Telemetry: tel, client: client, next: next, dialed: dialed}
	r.streamer = NewStreamer(set.Logger, backoff, open)
	return r, nil
}

// Start creates the connection and starts streaming. gRPC connects lazily, so an
// unreachable service is retried by the stream loop, not reported as a failure to
// start.
func (r *GRPCReceiver) Start(ctx context.Context, host component.Host) error {
	conn, err := r.client.ToClientConn(ctx, host.GetExtensions(), r.Settings.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("%s: %w", r.client.Endpoint, err)
	}
	r.conn = conn
	r.dialed(conn)
	if r.leader == nil {
		r.StartStreaming()
		return nil
	}
	enf, err := enforcerextension.Find(host, *r.leader)
	if err != nil {
		return err
	}
	// Each term of leadership opens the stream, whose first request asks for the
	// data plane's recent history (the backfill), and its end closes it.
	enf.OnLeading(func(ctx context.Context) {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		r.StartStreaming()
		r.mu.Unlock()
		<-ctx.Done()
		r.StopStreaming()
	})
	return nil
}

// Shutdown stops streaming and closes the connection.
func (r *GRPCReceiver) Shutdown(context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.StopStreaming()
	if r.conn != nil {
		return r.conn.Close()
	}
	return nil
}

// StartStreaming opens the flow stream; a no-op when it is open.
func (r *GRPCReceiver) StartStreaming() { r.streamer.StartStreaming() }

// StopStreaming closes the flow stream; the collector keeps running.
func (r *GRPCReceiver) StopStreaming() { r.streamer.StopStreaming() }

// Emit hands one record to the pipeline and counts it.
func (r *GRPCReceiver) Emit(ctx context.Context, rec *flow.Record) {
	logs := plog.NewLogs()
	rec.AppendTo(logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	if err := r.next.ConsumeLogs(ctx, logs); err != nil {
		r.Settings.Logger.Error("the pipeline refused a flow record", zap.Error(err))
		return
	}
	r.Telemetry.Accepted(ctx, 1)
}

// recvFailed counts a stream error that is an undecodable message.
func (r *GRPCReceiver) recvFailed(ctx context.Context, err error) {
	if ctx.Err() == nil && IsUndecodable(err) {
		r.Telemetry.Dropped(ctx, DropMalformed)
	}
}

// Drain reads a stream until it ends, handing each message to handle. It returns
// whether anything arrived (a stream that delivered resets the backoff) and why the
// stream ended, after counting an undecodable message as a drop.
func Drain[M any](ctx context.Context, r *GRPCReceiver, recv func() (M, error), handle func(context.Context, M)) (bool, error) {
	received := false
	for {
		msg, err := recv()
		if err != nil {
			r.recvFailed(ctx, err)
			return received, err
		}
		received = true
		handle(ctx, msg)
	}
}
