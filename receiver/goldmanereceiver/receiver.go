package goldmanereceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/internal/metadata"
)

// aggregationInterval is the only aggregation interval that Goldmane's stream
// accepts, in seconds.
const aggregationInterval = 15

// goldmaneReceiver streams Flows.Stream from Goldmane while started.
type goldmaneReceiver struct {
	*flowsource.GRPCReceiver
	cfg    *Config
	client pb.FlowsClient
	// decoder is used only by the goroutine that drains the stream.
	decoder *flowDecoder

	// cursor holds the start time of the newest flow received. A re-opened
	// stream starts at that bucket again, not after it: Goldmane's buckets
	// are 15 s, and resuming after it could lose the rest of that bucket. A
	// repeat of a learned edge changes nothing; losing one would. The same
	// holds across leaders: a new leader that was handed the stream starts
	// at the previous leader's newest bucket, and counts at most that bucket
	// again, instead of the whole backfill.
	cursor flowsource.Cursor

	// leader, when configured, gates the stream on leadership and hands the
	// cursor from leader to leader in its checkpoint store.
	leader leaderelectorextension.Leadership
}

func newGoldmaneReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*goldmaneReceiver, error) {
	r := &goldmaneReceiver{cfg: cfg, decoder: newFlowDecoder()}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	tel := flowsource.NewTelemetry(set.ID, flowsource.Counters{
		Accepted: tb.NetworkEnforcerReceiverFlowsAccepted, Dropped: tb.NetworkEnforcerReceiverFlowsDropped,
	})
	base, err := flowsource.NewGRPCReceiver(set, tel, &cfg.ClientConfig, cfg.Reconnect, cfg.Batch, next,
		func(conn *grpc.ClientConn) { r.client = pb.NewFlowsClient(conn) }, r.stream)
	if err != nil {
		return nil, err
	}
	r.GRPCReceiver = base
	return r, nil
}

// Start starts streaming: only while the configured leader elector leads,
// or from start to shutdown when none is configured.
func (r *goldmaneReceiver) Start(ctx context.Context, host component.Host) error {
	e, err := leaderelectorextension.FindOptional[leaderelectorextension.Leadership](host, r.cfg.LeaderElector)
	if err != nil {
		return err
	}
	r.leader = e
	return r.GRPCReceiver.Start(ctx, host, e) // a nil e streams from start to shutdown
}

// Shutdown stops the stream once its records are in the pipeline, and hands
// Goldmane on in the leader's checkpoint store: the next leader resumes at
// the newest bucket received.
func (r *goldmaneReceiver) Shutdown(ctx context.Context) error {
	err := r.GRPCReceiver.Shutdown(ctx)
	r.cursor.Release(r.leader, flowsource.SourceGoldmane)
	return err
}

// request builds the stream's request: from the newest bucket received, or
// the one that the previous leader handed on; else from start_time_gte.
func (r *goldmaneReceiver) request(ctx context.Context) (*pb.FlowStreamRequest, error) {
	if err := r.cursor.Take(ctx, r.leader, flowsource.SourceGoldmane, time.Time{}); err != nil {
		return nil, err
	}
	req := &pb.FlowStreamRequest{StartTimeGte: r.cfg.StartTimeGte, AggregationInterval: aggregationInterval}
	if at, _, ok := r.cursor.ResumeAt(0); ok {
		req.StartTimeGte = at.Unix()
	}
	return req, nil
}

// stream runs one Flows.Stream until it breaks or ctx ends. Its messages are
// decoded by the receiver's own decoder, which reads only the fields that the
// flow schema needs, into memory that each message reuses.
func (r *goldmaneReceiver) stream(ctx context.Context) (bool, error) {
	req, err := r.request(ctx)
	if err != nil {
		return false, err
	}
	stream, err := r.client.Stream(ctx, req, wirecodec.CallOption())
	if err != nil {
		return false, err
	}
	res := &result{dec: r.decoder}
	recv := func() (*result, error) { return res, stream.RecvMsg(res) }
	return flowsource.Drain(ctx, r.GRPCReceiver, recv, func(ctx context.Context, res *result) {
		r.handleFlow(ctx, res.flow)
	})
}

func (r *goldmaneReceiver) handleFlow(ctx context.Context, f *pb.Flow) {
	if start := f.GetStartTime(); start > 0 {
		r.cursor.Read(time.Unix(start, 0))
	}
	var rec flow.Record
	if reason, ok := convertFlow(f, &rec); !ok {
		r.Telemetry.Dropped(ctx, reason)
		return
	}
	r.Emit(&rec)
}
