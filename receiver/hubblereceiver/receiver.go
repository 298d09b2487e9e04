package hubblereceiver

import (
	"context"
	"math"
	"sync"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	relaypb "github.com/cilium/cilium/api/v1/relay"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// hubbleReceiver streams Observer.GetFlows from Hubble Relay while started,
// or in nodes mode from each node's Hubble server (nodes.go).
type hubbleReceiver struct {
	*flowsource.GRPCReceiver
	cfg    *Config
	client observer.ObserverClient

	// peers and nodes are nodes mode's: the Peer service's client, and the
	// nodes it announced and their readers.
	peers peerpb.PeerClient
	nodes *nodePool

	// resumeFrom is the time of the newest flow received, so that a re-opened
	// stream continues where the broken one stopped instead of losing the gap.
	mu         sync.Mutex
	resumeFrom time.Time
	// countFrom, after a hand-off, is the previous leader's last flow: the
	// stream starts one connection period earlier, and the flows up to it only
	// tell the connections apart (a connection that it counted, whose events
	// go on after it, is not counted again).
	countFrom time.Time

	// conns is the memory of connections of every stream; decoder is used
	// only by the goroutine that drains the relay's stream.
	conns   *connections
	decoder *flowDecoder

	// enforcer, when configured, gates the stream on leadership and passes it
	// between leaders: a new leader resumes after the flows that the previous
	// one wrote, and this one reports, on shutdown, the newest it handed on.
	enforcer enforcerextension.Leadership
}

func newHubbleReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*hubbleReceiver, error) {
	r := &hubbleReceiver{cfg: cfg, conns: newConnections(), decoder: newFlowDecoder()}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	r.nodes = newNodePool(r, set.ID, tb.NetworkEnforcerReceiverNodes)
	tel := flowsource.NewTelemetry(set.ID, flowsource.Counters{
		Accepted: tb.NetworkEnforcerReceiverFlowsAccepted, Dropped: tb.NetworkEnforcerReceiverFlowsDropped,
		Lost: tb.NetworkEnforcerReceiverLostEvents, NodeErrors: tb.NetworkEnforcerReceiverNodeErrors,
	})
	dialed, open := func(conn *grpc.ClientConn) { r.client = observer.NewObserverClient(conn) }, r.stream
	if cfg.Mode == ModeNodes {
		dialed, open = func(conn *grpc.ClientConn) { r.peers = peerpb.NewPeerClient(conn) }, r.watchPeers
	}
	base, err := flowsource.NewGRPCReceiver(set, tel, &cfg.ClientConfig, cfg.Reconnect, cfg.Batch, next, dialed, open)
	if err != nil {
		return nil, err
	}
	r.GRPCReceiver = base
	return r, nil
}

// Start starts streaming: only while the configured enforcer extension leads,
// or from start to shutdown when none is configured. In nodes mode every
// replica reads the nodes it owns, from start to shutdown.
func (r *hubbleReceiver) Start(ctx context.Context, host component.Host) error {
	if r.cfg.Mode == ModeNodes {
		return r.startNodes(ctx, host)
	}
	e, err := enforcerextension.FindOptional[enforcerextension.Leadership](host, r.cfg.Enforcer)
	if err != nil {
		return err
	}
	if e == nil {
		return r.GRPCReceiver.Start(ctx, host, nil) // streams from start to shutdown
	}
	r.enforcer = e
	return r.GRPCReceiver.Start(ctx, host, e)
}

// startNodes follows the Peer service and reads the nodes: those that the
// enforcer's membership gives this replica, and each node's checkpoint
// follows its flows handed on; every node without an enforcer.
func (r *hubbleReceiver) startNodes(ctx context.Context, host component.Host) error {
	m, err := enforcerextension.FindOptional[enforcerextension.Membership](host, r.cfg.Enforcer)
	if err != nil {
		return err
	}
	r.nodes.host, r.nodes.member, r.nodes.running = host, m, true
	if m != nil {
		r.OnAccepted(r.nodes.checkpoint)
		m.OnMembersChanged(r.nodes.rebalance)
	}
	return r.GRPCReceiver.Start(ctx, host, nil)
}

// StartStreaming opens the stream: in nodes mode, the Peer service's and
// those of the nodes owned.
func (r *hubbleReceiver) StartStreaming() {
	r.GRPCReceiver.StartStreaming()
	if r.cfg.Mode == ModeNodes {
		r.nodes.setRunning(true)
	}
}

// StopStreaming closes the stream, once the records received are in the
// pipeline: in nodes mode, every node's too.
func (r *hubbleReceiver) StopStreaming() {
	r.GRPCReceiver.StopStreaming()
	if r.cfg.Mode == ModeNodes {
		r.nodes.setRunning(false)
		r.Flush()
	}
}

// Shutdown stops the stream once its records are in the pipeline, and tells
// the enforcer the time of the newest flow received: the hand-off to the next
// leader resumes after it. In nodes mode it stops the Peer service's stream
// and every node's, and the last records' checkpoints are published before
// it returns.
func (r *hubbleReceiver) Shutdown(ctx context.Context) error {
	if r.cfg.Mode == ModeNodes {
		r.GRPCReceiver.StopStreaming()
		r.nodes.close()
		return r.GRPCReceiver.Shutdown(ctx)
	}
	err := r.GRPCReceiver.Shutdown(ctx)
	if r.enforcer == nil {
		return err
	}
	// A term that received nothing new hands on what it was handed.
	newest := r.newest()
	if from, ok := r.enforcer.ResumeFrom(); ok && from.After(newest) {
		newest = from
	}
	if !newest.IsZero() {
		r.enforcer.HandedOn(newest)
	}
	return err
}

// newest is the time of the newest flow received.
func (r *hubbleReceiver) newest() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resumeFrom
}

// request builds the GetFlows request: on the first open after a hand-off
// (the previous leader wrote every flow up to a time), from two connection
// periods before that time, to learn the connections it counted; else the
// backfill (the relay's buffer); after that from just after the newest flow
// already received.
func (r *hubbleReceiver) request() *observer.GetFlowsRequest {
	req := &observer.GetFlowsRequest{Follow: true}
	if r.cfg.FieldMask {
		req.FieldMask = &fieldmaskpb.FieldMask{Paths: fieldMaskPaths}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	resume := r.resumeFrom
	if r.enforcer != nil {
		if from, ok := r.enforcer.ResumeFrom(); ok && from.After(resume) {
			r.countFrom = from
			req.Since = timestamppb.New(from.Add(-2 * connectionPeriod))
			return req
		}
	}
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

// stream runs one GetFlows stream until it breaks or ctx ends. Its messages
// are decoded by the receiver's own decoder, which reads only the fields that
// the flow schema needs, into memory that each message reuses.
func (r *hubbleReceiver) stream(ctx context.Context) (bool, error) {
	stream, err := r.client.GetFlows(ctx, r.request(), wirecodec.CallOption())
	if err != nil {
		r.relayUnreadable(ctx)
		return false, err
	}
	resp := &response{dec: r.decoder}
	recv := func() (*response, error) { return resp, stream.RecvMsg(resp) }
	received, err := flowsource.Drain(ctx, r.GRPCReceiver, recv, r.handleResponse)
	r.relayUnreadable(ctx)
	return received, err
}

// relayUnreadable reports a gap of every node when the relay's stream broke
// or did not open once flows were read (by this replica, or by the leader it
// took over from). Before that nothing is being learned yet, so nothing is
// missed: the first stream's backfill starts learning, as a collector's start
// does.
func (r *hubbleReceiver) relayUnreadable(ctx context.Context) {
	r.mu.Lock()
	reading := !r.resumeFrom.IsZero() || !r.countFrom.IsZero()
	r.mu.Unlock()
	if reading {
		r.unreadable(ctx, "")
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

func (r *hubbleReceiver) handleResponse(ctx context.Context, resp *response) {
	switch {
	case resp.flow != nil:
		r.handleFlow(ctx, resp.flow)
	case resp.lostEvents != nil:
		r.lost(ctx, resp.lostEvents, resp.nodeName, r.Settings.Logger)
	case resp.nodeStatus != nil:
		r.nodeStatus(ctx, resp.nodeStatus)
	}
}

// nodeStatus reports the relay's news of its nodes. A node it cannot read
// (its agent restarting, say) sends nothing until the relay reconnects to it,
// and what that agent's datapath emitted while no agent read it is gone: the
// relay can say which node, not how many flows.
func (r *hubbleReceiver) nodeStatus(ctx context.Context, ns *relaypb.NodeStatusEvent) {
	switch ns.GetStateChange() {
	case relaypb.NodeState_NODE_ERROR, relaypb.NodeState_NODE_UNAVAILABLE:
		r.Telemetry.NodeErrors(ctx, len(ns.GetNodeNames()))
		r.Settings.Logger.Warn("Hubble Relay cannot read nodes: their flows are lost until it reconnects",
			zap.String("state", ns.GetStateChange().String()), zap.Strings("nodes", ns.GetNodeNames()),
			zap.String("message", ns.GetMessage()))
		for _, node := range ns.GetNodeNames() {
			r.unreadable(ctx, node)
		}
	default:
		r.Settings.Logger.Info("Hubble Relay node status",
			zap.String("state", ns.GetStateChange().String()), zap.Strings("nodes", ns.GetNodeNames()))
	}
}

func (r *hubbleReceiver) handleFlow(ctx context.Context, f *flowpb.Flow) {
	handedOff := false
	if t := f.GetTime(); t != nil {
		ts := t.AsTime()
		r.mu.Lock()
		if ts.After(r.resumeFrom) {
			r.resumeFrom = ts
		}
		handedOff = !r.countFrom.IsZero() && !ts.After(r.countFrom)
		r.mu.Unlock()
	}
	var rec flow.Record
	reason, ok := r.conns.convert(f, &rec)
	switch {
	case handedOff:
		r.Telemetry.Dropped(ctx, dropHandedOff)
	case !ok:
		r.Telemetry.Dropped(ctx, reason)
	default:
		r.Emit(&rec)
	}
}
