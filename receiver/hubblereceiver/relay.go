package hubblereceiver

import (
	"context"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	relaypb "github.com/cilium/cilium/api/v1/relay"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// relayMode reads every node's flows through Hubble Relay, in one GetFlows
// stream: the GRPCReceiver's. With a leader elector, only the leader
// replica reads, and the stream passes from leader to leader.
type relayMode struct {
	r      *hubbleReceiver
	cfg    *RelayConfig
	client observer.ObserverClient

	// cursor is where the relay's stream stands; after a hand-off, the
	// previous leader's last flow is its count-from.
	cursor flowsource.Cursor

	// decoder is used only by the goroutine that drains the stream.
	decoder *flowDecoder

	// leader, when configured, gates the stream on leadership and passes it
	// between leaders: a new leader resumes after the flows that the previous
	// one wrote, and this one reports, on shutdown, the newest it read.
	leader leaderelectorextension.Leadership
}

func newRelayMode(r *hubbleReceiver, cfg *RelayConfig) *relayMode {
	return &relayMode{r: r, cfg: cfg, decoder: newFlowDecoder()}
}

func (m *relayMode) dialed(conn *grpc.ClientConn) { m.client = observer.NewObserverClient(conn) }

func (m *relayMode) open(ctx context.Context) (bool, error) { return m.stream(ctx) }

// start streams only while the configured leader elector leads, or from
// start to shutdown when none is configured.
func (m *relayMode) start(ctx context.Context, host component.Host) error {
	l, err := leaderelectorextension.FindOptional[leaderelectorextension.Leadership](host, m.r.cfg.LeaderElector)
	if err != nil {
		return err
	}
	if l == nil {
		return m.r.GRPCReceiver.Start(ctx, host, nil) // streams from start to shutdown
	}
	m.leader = l
	return m.r.GRPCReceiver.Start(ctx, host, l)
}

func (m *relayMode) startStreaming() { m.r.GRPCReceiver.StartStreaming() }

func (m *relayMode) stopStreaming() { m.r.GRPCReceiver.StopStreaming() }

// shutdown stops the stream once its records are in the pipeline, and hands
// the relay on in the leader's checkpoint store: the next leader resumes
// after the newest flow received.
func (m *relayMode) shutdown(ctx context.Context) error {
	err := m.r.GRPCReceiver.Shutdown(ctx)
	m.cursor.Release(m.leader, flowsource.SourceHubbleRelay)
	return err
}

// request builds the GetFlows request: on the first open after a hand-off
// (the previous leader wrote every flow up to a time), from two connection
// periods before that time, to learn the connections it counted; else the
// backfill (the relay's buffer); after that from just after the newest flow
// already received.
func (m *relayMode) request(ctx context.Context) (*observer.GetFlowsRequest, error) {
	req := newRequest(m.cfg.FieldMask)
	if err := m.cursor.Take(ctx, m.leader, flowsource.SourceHubbleRelay, time.Time{}); err != nil {
		return nil, err
	}
	if !resume(&m.cursor, req) {
		m.r.cfg.Backfill.backfill(req)
	}
	return req, nil
}

// stream runs one GetFlows stream until it breaks or ctx ends. Its messages
// are decoded by the receiver's own decoder, which reads only the fields that
// the flow schema needs, into memory that each message reuses.
func (m *relayMode) stream(ctx context.Context) (bool, error) {
	req, err := m.request(ctx)
	if err != nil {
		return false, err
	}
	stream, err := m.client.GetFlows(ctx, req, wirecodec.CallOption())
	if err != nil {
		m.relayUnreadable(ctx)
		return false, err
	}
	resp := &response{dec: m.decoder}
	recv := func() (*response, error) { return resp, stream.RecvMsg(resp) }
	received, err := flowsource.Drain(ctx, m.r.GRPCReceiver, recv, m.handleResponse)
	m.relayUnreadable(ctx)
	return received, err
}

// relayUnreadable reports a gap of every node when the relay's stream broke
// or did not open once flows were read (by this replica, or by the leader it
// took over from). Before that nothing is being learned yet, so nothing is
// missed: the first stream's backfill starts learning, as a collector's start
// does.
func (m *relayMode) relayUnreadable(ctx context.Context) {
	if m.cursor.Begun() {
		m.r.unreadable(ctx, "")
	}
}

func (m *relayMode) handleResponse(ctx context.Context, resp *response) {
	switch {
	case resp.flow != nil:
		m.handleFlow(ctx, resp.flow)
	case resp.lostEvents != nil:
		m.r.lost(ctx, resp.lostEvents, resp.nodeName, m.r.Settings.Logger)
	case resp.nodeStatus != nil:
		m.nodeStatus(ctx, resp.nodeStatus)
	}
}

// nodeStatus reports the relay's news of its nodes. A node it cannot read
// (its agent restarting, say) sends nothing until the relay reconnects to it,
// and what that agent's datapath emitted while no agent read it is gone: the
// relay can say which node, not how many flows.
func (m *relayMode) nodeStatus(ctx context.Context, ns *relaypb.NodeStatusEvent) {
	logger := m.r.Settings.Logger
	switch ns.GetStateChange() {
	case relaypb.NodeState_NODE_ERROR, relaypb.NodeState_NODE_UNAVAILABLE:
		m.r.Telemetry.NodeErrors(ctx, len(ns.GetNodeNames()))
		logger.Warn("Hubble Relay cannot read nodes: their flows are lost until it reconnects",
			zap.String("state", ns.GetStateChange().String()), zap.Strings("nodes", ns.GetNodeNames()),
			zap.String("message", ns.GetMessage()))
		for _, node := range ns.GetNodeNames() {
			m.r.unreadable(ctx, node)
		}
	default:
		logger.Info("Hubble Relay node status",
			zap.String("state", ns.GetStateChange().String()), zap.Strings("nodes", ns.GetNodeNames()))
	}
}

func (m *relayMode) handleFlow(ctx context.Context, f *flowpb.Flow) {
	handedOff := false
	if t := f.GetTime(); t != nil {
		handedOff = m.cursor.Read(t.AsTime())
	}
	var rec flow.Record
	reason, ok := m.r.conns.convert(f, &rec)
	switch {
	case handedOff:
		m.r.Telemetry.Dropped(ctx, dropHandedOff)
	case !ok:
		m.r.Telemetry.Dropped(ctx, reason)
	default:
		m.r.Emit(&rec)
	}
}
