package flowsource

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// Leadership is what gates a receiver's stream: the start callback is called,
// in its own goroutine, at the start of each term of leadership, and its
// context ends with the term. The leader elector provides it; the receiver
// finds the extension that its `leader_elector` key names.
type Leadership interface {
	// SetCallBackFuncs registers onStartedLeading and onStoppedLeading
	// (either may be nil); when this replica leads already,
	// onStartedLeading starts now.
	SetCallBackFuncs(onStartedLeading func(ctx context.Context), onStoppedLeading func())
	// IsLeader reports whether this replica leads now.
	IsLeader() bool
}

// TransportGRPC is the transport of the gRPC flow receivers, as the collector's
// receiver telemetry names it.
const TransportGRPC = "grpc"

// GRPCReceiver is what the gRPC flow receivers share: the connection to the data
// plane's service, the stream loop, the hand-off of records to the pipeline in
// batches and the counters. A receiver embeds it and supplies the stream itself.
type GRPCReceiver struct {
	Settings  receiver.Settings
	Telemetry *Telemetry

	client   *configgrpc.ClientConfig
	batch    *batcher
	streamer *Streamer
	conn     *grpc.ClientConn
	dialed   func(*grpc.ClientConn)

	mu     sync.Mutex
	closed bool
}

// NewGRPCReceiver prepares a receiver that counts on tel. dialed receives the
// connection at Start, to build the service client from; open runs one stream
// on it. Records go to next in batches as batch says; the open batch goes out
// whenever a stream ends. Each batch is a receive operation of the collector's
// standard receiver telemetry (otelcol_receiver_accepted_log_records and the
// refused and failed counts), on the gRPC transport, in the format named by
// the receiver's type.
func NewGRPCReceiver(set receiver.Settings, tel *Telemetry, client *configgrpc.ClientConfig, backoff ReconnectConfig,
	batch BatchConfig, next consumer.Logs, dialed func(*grpc.ClientConn), open OpenFunc,
) (*GRPCReceiver, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: TransportGRPC, ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	r := &GRPCReceiver{Settings: set, Telemetry: tel, client: client, dialed: dialed}
	r.batch = newBatcher(batch, next, tel, operation{obs: obs, format: set.ID.Type().String()}, set.Logger)
	r.streamer = NewStreamer(set.Logger, backoff, func(ctx context.Context) (bool, error) {
		defer r.batch.flush()
		return open(ctx)
	})
	return r, nil
}

// Start creates the connection and starts streaming: at once when leader is nil,
// else only while this replica leads, so that a standby reads no flows. gRPC
// connects lazily, so an unreachable service is retried by the stream loop, not
// reported as a failure to start.
func (r *GRPCReceiver) Start(ctx context.Context, host component.Host, leader Leadership) error {
	conn, err := r.client.ToClientConn(ctx, host.GetExtensions(), r.Settings.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("%s: %w", r.client.Endpoint, err)
	}
	r.conn = conn
	r.dialed(conn)
	if leader == nil {
		r.StartStreaming()
		return nil
	}
	// Each term of leadership opens the stream, whose first request asks for the
	// data plane's recent history (the backfill), and its end closes it.
	leader.SetCallBackFuncs(func(ctx context.Context) {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		r.StartStreaming()
		r.mu.Unlock()
		<-ctx.Done()
		r.StopStreaming()
	}, nil)
	return nil
}

// Shutdown stops streaming, hands on the open batch and closes the connection.
func (r *GRPCReceiver) Shutdown(context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.StopStreaming()
	r.batch.stop()
	if r.conn != nil {
		return r.conn.Close()
	}
	return nil
}

// StartStreaming opens the flow stream; a no-op when it is open.
func (r *GRPCReceiver) StartStreaming() { r.streamer.StartStreaming() }

// StopStreaming closes the flow stream, once the records received are in the
// pipeline; the collector keeps running.
func (r *GRPCReceiver) StopStreaming() { r.streamer.StopStreaming() }

// Emit adds one record to the open batch; it is counted when its batch is in
// the pipeline.
func (r *GRPCReceiver) Emit(rec *flow.Record) { r.batch.add(rec) }

// EmitMarked is Emit for a record of key's input (one stream among several)
// at t; with rec nil, it notes an input of key at t that gave no record. Once
// the batch that holds it is in the pipeline, the function that OnAccepted set
// learns that key's input is handed on up to t.
func (r *GRPCReceiver) EmitMarked(rec *flow.Record, key string, t time.Time) {
	r.batch.addMarked(rec, key, t)
}

// EmitGap adds a gap that the data plane reported to the open batch, after
// its records: what learns from the flows knows of it with the flows around
// it.
func (r *GRPCReceiver) EmitGap(g *flow.Gap) { r.batch.addGap(g) }

// OnAccepted sets fn, called with the marks of each batch that the pipeline
// accepted (or that held marks alone), in the batches' order, from the
// goroutine that hands them on. Call it before Start.
func (r *GRPCReceiver) OnAccepted(fn func([]Mark)) { r.batch.accepted = fn }

// Flush hands the open batch on and returns once every batch emitted before
// it is in the pipeline.
func (r *GRPCReceiver) Flush() { r.batch.flush() }

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
