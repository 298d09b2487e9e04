package hubblereceiver

import (
	"context"
	"math"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// hubbleReceiver streams Observer.GetFlows, in the mode that the
// configuration sets: from Hubble Relay (relay.go) or from each node's Hubble
// server (nodes.go). What the modes share is here: the connection, batches
// and counters (the GRPCReceiver), the memory of connections, and the gaps.
type hubbleReceiver struct {
	*flowsource.GRPCReceiver
	cfg  *Config
	mode mode

	// conns is the memory of connections of every stream.
	conns *connections
}

// mode is where the receiver reads its flows, chosen once, when it is
// created, from the mode that the configuration sets; the receiver's
// lifecycle is the mode's.
type mode interface {
	// dialed receives the connection that the GRPCReceiver dialled (to
	// Hubble Relay, or to the Peer service), and open runs one stream on it.
	dialed(conn *grpc.ClientConn)
	open(ctx context.Context) (bool, error)
	// start finds the enforcer extension, when one is configured, and starts
	// the GRPCReceiver.
	start(ctx context.Context, host component.Host) error
	startStreaming()
	stopStreaming()
	shutdown(ctx context.Context) error
}

func newHubbleReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*hubbleReceiver, error) {
	r := &hubbleReceiver{cfg: cfg, conns: newConnections()}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	tel := flowsource.NewTelemetry(set.ID, flowsource.Counters{
		Accepted: tb.NetworkEnforcerReceiverFlowsAccepted, Dropped: tb.NetworkEnforcerReceiverFlowsDropped,
		Lost: tb.NetworkEnforcerReceiverLostEvents, NodeErrors: tb.NetworkEnforcerReceiverNodeErrors,
	})
	var client *configgrpc.ClientConfig
	switch relay, nodes := cfg.Relay.Get(), cfg.Nodes.Get(); {
	case relay != nil && nodes == nil:
		r.mode, client = newRelayMode(r, relay), &relay.ClientConfig
	case nodes != nil && relay == nil:
		r.mode, client = newNodePool(r, nodes, set.ID, tb.NetworkEnforcerReceiverNodes), &nodes.ClientConfig
	default:
		return nil, errOneMode
	}
	base, err := flowsource.NewGRPCReceiver(set, tel, client, cfg.Reconnect, cfg.Batch, next, r.mode.dialed, r.mode.open)
	if err != nil {
		return nil, err
	}
	r.GRPCReceiver = base
	return r, nil
}

// Start starts streaming: in relay mode only while the configured leader
// elector leads (from start to shutdown when none is configured); in nodes
// mode every replica reads the nodes it owns, from start to shutdown.
func (r *hubbleReceiver) Start(ctx context.Context, host component.Host) error {
	return r.mode.start(ctx, host)
}

// StartStreaming opens the stream: in nodes mode, the Peer service's and
// those of the nodes owned.
func (r *hubbleReceiver) StartStreaming() { r.mode.startStreaming() }

// StopStreaming closes the stream, once the records received are in the
// pipeline: in nodes mode, every node's too.
func (r *hubbleReceiver) StopStreaming() { r.mode.stopStreaming() }

// Shutdown stops streaming once the records received are in the pipeline,
// and tells the leader elector how far they reached (relay.go, nodes.go).
func (r *hubbleReceiver) Shutdown(ctx context.Context) error { return r.mode.shutdown(ctx) }

// newRequest is a GetFlows request that follows the stream, for only the
// fields that the receiver reads when fieldMask is on.
func newRequest(fieldMask bool) *observer.GetFlowsRequest {
	req := &observer.GetFlowsRequest{Follow: true}
	if fieldMask {
		req.FieldMask = &fieldmaskpb.FieldMask{Paths: fieldMaskPaths}
	}
	return req
}

// backfill asks, in req, for the buffered flows that b selects: none (from
// now) when it is off, the newest b.Number, or those of the last b.Since.
func (b BackfillConfig) backfill(req *observer.GetFlowsRequest) {
	switch {
	case !b.Enabled:
		req.Since = timestamppb.Now()
	case b.Number > 0:
		req.Number = b.Number
	default:
		req.Since = timestamppb.New(time.Now().Add(-b.Since))
	}
}

// unreadable reports a gap: node's flows (every node's, for "") could not be
// read while its stream was down. The stream re-opens after the newest flow
// received, but what the node's buffer no longer holds by then is gone, and
// nothing says how much: learning may have missed some. A stream that ends
// because ctx did (leadership passed, shutdown) is no gap.
func (r *hubbleReceiver) unreadable(ctx context.Context, node string) {
	if ctx.Err() != nil {
		return
	}
	r.EmitGap(&flow.Gap{Time: time.Now(), Provider: flow.ProviderCilium, Cause: flow.GapNodeUnreadable, Node: node})
}

// lost reports a lost-event notice as a gap of the node that sent it (the
// relay names it; every node when it does not).
func (r *hubbleReceiver) lost(ctx context.Context, lost *flowpb.LostEvent, node string, logger *zap.Logger) {
	r.Telemetry.Lost(ctx, int64(lost.GetNumEventsLost()))
	logger.Warn("Hubble lost flows before sending them",
		zap.Uint64("lost", lost.GetNumEventsLost()), zap.String("source", lost.GetSource().String()), zap.String("node", node))
	r.EmitGap(&flow.Gap{Time: time.Now(), Provider: flow.ProviderCilium, Cause: flow.GapLostEvents, Node: node,
		Lost: int64(min(lost.GetNumEventsLost(), math.MaxInt64))})
}
