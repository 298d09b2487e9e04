package hubblereceiver

import (
	"context"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// nodeReader reads one node's Hubble server.
type nodeReader struct {
	pool   *nodePool
	name   string
	logger *zap.Logger

	// conn, client and streamer are those of the node's address now; nil
	// when it could not be dialled. They change under the pool's lock.
	conn     *grpc.ClientConn
	client   observer.ObserverClient
	streamer *flowsource.Streamer

	// decoder is used by the one goroutine that drains the stream.
	decoder *flowDecoder

	// cursor is where the node's stream stands; when another replica read
	// the node before, its checkpoint is the count-from.
	cursor flowsource.Cursor
}

func newNodeReader(p *nodePool, name string) *nodeReader {
	return &nodeReader{pool: p, name: name, decoder: newFlowDecoder(),
		logger: p.r.Settings.Logger.With(zap.String("node", name))}
}

// awaitHandOff takes the node in the membership's checkpoint store before
// its first stream: once the checkpoint that another replica published for it
// is final, the node counts from where every flow is counted, and this
// replica's claim is written (Membership.Take). Without membership every node
// is this replica's from the start.
func (n *nodeReader) awaitHandOff(ctx context.Context) error {
	if n.pool.member == nil || n.cursor.Begun() {
		return nil
	}
	return n.cursor.Take(ctx, n.pool.member, n.name, n.backfillStart())
}

// backfillStart is the time before which a node's first stream reads
// nothing: the backfill's start, or now without one.
func (n *nodeReader) backfillStart() time.Time {
	b := n.pool.r.cfg.Backfill
	switch {
	case !b.Enabled:
		return time.Now()
	case b.Number > 0:
		return time.Unix(0, 1) // the newest b.Number flows, of any age
	default:
		return time.Now().Add(-b.Since)
	}
}

// start dials the node at its address and opens its stream. A node that
// cannot be dialled (an address or a TLS setting that cannot work) is
// counted and logged, and read once the Peer service announces it anew.
func (n *nodeReader) start(at peer) {
	conn, err := n.pool.dial(n.name, at)
	if err != nil {
		n.pool.r.Telemetry.NodeErrors(context.Background(), 1)
		n.logger.Error("cannot dial the node's Hubble server: its flows are not read until the Peer service announces it anew", zap.Error(err))
		n.pool.r.unreadable(context.Background(), n.name)
		return
	}
	n.conn, n.client = conn, observer.NewObserverClient(conn)
	n.streamer = flowsource.NewStreamer(n.logger, n.pool.r.cfg.Reconnect, n.stream)
	n.streamer.StartStreaming()
}

// stop closes the node's stream and connection.
func (n *nodeReader) stop() {
	if n.streamer != nil {
		n.streamer.StopStreaming()
	}
	if n.conn != nil {
		_ = n.conn.Close()
	}
	n.conn, n.client, n.streamer = nil, nil, nil
}

// request builds the node's GetFlows request: after the newest flow received
// from it; else, when another replica read it before, from two connection
// periods before that one's checkpoint; else the backfill.
func (n *nodeReader) request() *observer.GetFlowsRequest {
	req := newRequest(n.pool.cfg.FieldMask)
	if !resume(&n.cursor, req) {
		n.pool.r.cfg.Backfill.backfill(req)
	}
	return req
}

// stream runs one GetFlows stream of the node until it breaks or ctx ends,
// with the receiver's own decoder. A stream that breaks, or does not open, is
// a node error.
func (n *nodeReader) stream(ctx context.Context) (bool, error) {
	if err := n.awaitHandOff(ctx); err != nil {
		return false, err // the stream ends before its first read
	}
	stream, err := n.client.GetFlows(ctx, n.request(), wirecodec.CallOption())
	if err != nil {
		n.failed(ctx, err)
		return false, err
	}
	resp := &response{dec: n.decoder}
	recv := func() (*response, error) { return resp, stream.RecvMsg(resp) }
	received, err := flowsource.Drain(ctx, n.pool.r.GRPCReceiver, recv, n.handleResponse)
	n.failed(ctx, err)
	return received, err
}

func (n *nodeReader) failed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	n.pool.r.Telemetry.NodeErrors(ctx, 1)
	n.logger.Warn("the node's Hubble stream broke: it is re-opened after the newest flow received", zap.Error(err))
	n.pool.r.unreadable(ctx, n.name)
}

func (n *nodeReader) handleResponse(ctx context.Context, resp *response) {
	switch {
	case resp.flow != nil:
		n.handleFlow(ctx, resp.flow)
	case resp.lostEvents != nil:
		// The node's own server may not name itself: the reader knows it.
		n.pool.r.lost(ctx, resp.lostEvents, n.name, n.logger)
	}
}

// handleFlow converts one flow of the node. With a membership, each flow that
// is not the previous reader's marks the batch, so that the node's checkpoint
// follows the flows handed on.
func (n *nodeReader) handleFlow(ctx context.Context, f *flowpb.Flow) {
	r := n.pool.r
	var ts time.Time
	handedOff := false
	if t := f.GetTime(); t != nil {
		ts = t.AsTime()
		handedOff = n.cursor.Read(ts)
	}
	var rec flow.Record
	reason, ok := r.conns.convert(f, &rec)
	marked := n.pool.member != nil && !handedOff && !ts.IsZero()
	switch {
	case handedOff:
		r.Telemetry.Dropped(ctx, dropHandedOff)
	case !ok:
		r.Telemetry.Dropped(ctx, reason)
		if marked {
			r.EmitMarked(nil, n.name, ts)
		}
	case marked:
		r.EmitMarked(&rec, n.name, ts)
	default:
		r.Emit(&rec)
	}
}
