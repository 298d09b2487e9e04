package hubblereceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/wirecodec"
)

// In nodes mode the receiver does what Hubble Relay does: it follows Cilium's
// Peer service (Peer.Notify), which announces each node's Hubble server
// (PEER_ADDED, PEER_UPDATED, PEER_DELETED, with its address and TLS server
// name), and reads each node it owns with a GetFlows stream of its own. The
// Peer stream is the GRPCReceiver's stream; each node's is a Streamer of its
// own, which re-opens it with backoff. Every node's records go into the one
// batcher, and through the one connections memory.

// peer is what the Peer service announced of a node.
type peer struct {
	address, serverName string
}

// nodePool holds the nodes that the Peer service announced and the readers
// of those that this replica owns.
type nodePool struct {
	r *hubbleReceiver

	mu      sync.Mutex
	host    component.Host
	member  enforcerextension.Membership // nil: every node is read
	running bool                         // between StartStreaming and StopStreaming
	closed  bool
	peers   map[string]peer
	readers map[string]*nodeReader
	// deleted are the nodes that the Peer service removed (and did not
	// announce again), by name: a batch that the pipeline takes after the
	// removal does not checkpoint them again. Apart from mu, which is held
	// while the batches are flushed.
	deleted sync.Map
	// reading records how many nodes this replica reads, after each change,
	// with the receiver's attribute.
	reading     metric.Int64Gauge
	readingAttr metric.RecordOption
}

func newNodePool(r *hubbleReceiver, id component.ID, reading metric.Int64Gauge) *nodePool {
	return &nodePool{r: r, peers: map[string]peer{}, readers: map[string]*nodeReader{}, reading: reading,
		readingAttr: metric.WithAttributeSet(attribute.NewSet(attribute.String("receiver", id.String())))}
}

// recordLocked records the number of nodes read, with p.mu held.
func (p *nodePool) recordLocked() {
	p.reading.Record(context.Background(), int64(len(p.readers)), p.readingAttr)
}

// watchPeers is the stream of the Peer service: it applies each change until
// the stream breaks. The nodes read stay read while it reconnects; the new
// stream announces every node again.
func (r *hubbleReceiver) watchPeers(ctx context.Context) (bool, error) {
	stream, err := r.peers.Notify(ctx, &peerpb.NotifyRequest{})
	if err != nil {
		return false, err
	}
	received := false
	for {
		cn, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				r.Settings.Logger.Warn("the Peer service's stream broke; the nodes found are still read", zap.Error(err))
			}
			return received, err
		}
		received = true
		r.nodes.apply(cn)
	}
}

// apply applies one change that the Peer service announced.
func (p *nodePool) apply(cn *peerpb.ChangeNotification) {
	name := cn.GetName()
	log := p.r.Settings.Logger.With(zap.String("node", name), zap.String("address", cn.GetAddress()),
		zap.String("change", cn.GetType().String()))
	if name == "" {
		log.Warn("the Peer service announced a node without a name: ignored")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	defer p.recordLocked()
	switch cn.GetType() {
	case peerpb.ChangeNotificationType_PEER_ADDED, peerpb.ChangeNotificationType_PEER_UPDATED:
		now := peer{address: cn.GetAddress(), serverName: cn.GetTls().GetServerName()}
		p.deleted.Delete(name)
		before, known := p.peers[name]
		p.peers[name] = now
		if n := p.readers[name]; n != nil {
			if (known && before != now) || n.streamer == nil {
				log.Info("a node's Hubble server moved: reading it at its new address")
				n.stop()
				n.start(now)
			}
			return
		}
		log.Info("the Peer service announced a node")
		p.startLocked(name)
	case peerpb.ChangeNotificationType_PEER_DELETED:
		log.Info("the Peer service announced that a node is gone")
		delete(p.peers, name)
		if n := p.readers[name]; n != nil {
			delete(p.readers, name)
			n.stop()
		}
		// Its checkpoint goes with it: published on every renewal, the
		// checkpoints of deleted nodes would otherwise grow without end.
		p.deleted.Store(name, struct{}{})
		if p.member != nil {
			p.member.Forget(name)
		}
	default:
		log.Warn("the Peer service announced a change of an unknown type: ignored")
	}
}

// owns reports whether this replica reads the node.
func (p *nodePool) owns(name string) bool {
	return p.member == nil || p.member.Owns(name)
}

// startLocked starts reading the node when this replica owns it.
func (p *nodePool) startLocked(name string) {
	if !p.running || !p.owns(name) {
		return
	}
	n := newNodeReader(p, name)
	p.readers[name] = n
	n.start(p.peers[name])
}

// rebalance stops reading the nodes that this replica no longer owns and
// starts those that it owns now: called when the members change. The last
// records of a node it stops are handed on, and checkpointed, before it
// returns.
func (p *nodePool) rebalance() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.running {
		return
	}
	defer p.recordLocked()
	var stopped []string
	for name, n := range p.readers {
		if !p.owns(name) {
			p.r.Settings.Logger.Info("another replica owns the node now: it is no longer read here", zap.String("node", name))
			delete(p.readers, name)
			n.stop()
			stopped = append(stopped, name)
		}
	}
	for name := range p.peers {
		if p.readers[name] == nil && p.owns(name) {
			p.r.Settings.Logger.Info("this replica owns the node now: reading it", zap.String("node", name))
			p.startLocked(name)
		}
	}
	if len(stopped) > 0 {
		p.r.Flush()
		// Checkpointed now: published at once, so that the new owners
		// resume from it without waiting for the next renewal.
		for _, name := range stopped {
			p.member.Release(name)
		}
	}
}

// setRunning starts reading the nodes owned (true), or stops reading every
// node (false); the nodes announced are kept.
func (p *nodePool) setRunning(running bool) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.running = running
	p.mu.Unlock()
	if running {
		p.rebalance()
		return
	}
	p.stopAll(false)
}

// close stops reading every node for good.
func (p *nodePool) close() { p.stopAll(true) }

func (p *nodePool) stopAll(closing bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = p.closed || closing
	for name, n := range p.readers {
		delete(p.readers, name)
		n.stop()
	}
	p.recordLocked()
}

// readingNow returns the names of the nodes read now.
func (p *nodePool) readingNow() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.readers))
	for name := range p.readers {
		names = append(names, name)
	}
	return names
}

// dial connects to a node's Hubble server with the receiver's gRPC client
// settings (the CA and client certificate among them), its address and the
// TLS server name that the Peer service announced, as Hubble Relay does.
func (p *nodePool) dial(name string, at peer) (*grpc.ClientConn, error) {
	addr, err := nodeAddress(at.address)
	if err != nil {
		return nil, err
	}
	client := p.r.cfg.ClientConfig
	client.Endpoint = addr
	switch {
	case client.TLS.Insecure && at.serverName != "":
		return nil, fmt.Errorf("the node's Hubble server has TLS (server name %q) and tls::insecure is true", at.serverName)
	case !client.TLS.Insecure && at.serverName == "":
		return nil, errors.New("the Peer service announces no TLS server name for the node: its Hubble server has no TLS, and tls::insecure is false")
	case !client.TLS.Insecure:
		client.TLS.ServerName = at.serverName
	}
	conn, err := client.ToClientConn(context.Background(), p.host.GetExtensions(), p.r.Settings.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("node %s at %s: %w", name, addr, err)
	}
	return conn, nil
}

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

	mu sync.Mutex
	// resumeFrom is the time of the newest flow received from the node: a
	// re-opened stream resumes after it.
	resumeFrom time.Time
	// countFrom, when another replica read the node before, is its
	// checkpoint: the stream starts two connection periods earlier, and the
	// flows up to it only tell the connections apart.
	countFrom time.Time
}

func newNodeReader(p *nodePool, name string) *nodeReader {
	return &nodeReader{pool: p, name: name, decoder: newFlowDecoder(),
		logger: p.r.Settings.Logger.With(zap.String("node", name))}
}

// handOverPoll is how often a node's new reader asks whether the previous
// reader's checkpoint is final.
const handOverPoll = 50 * time.Millisecond

// awaitHandOver waits, before the node's first stream, until the checkpoint
// that another replica published for it is final (that replica released the
// node, or left), and then counts from where every flow is counted (its
// checkpoint, or for one that was killed how far the leader took its
// records): what the previous reader sent since its last renewal is then not
// counted again. A previous reader that neither releases nor renews is gone
// within a lease, which bounds the wait. It then claims the node (Claim) and returns once the claim is
// written, or with ctx's error when ctx ends first. Without membership every
// node is this replica's from the start.
func (n *nodeReader) awaitHandOver(ctx context.Context) error {
	member := n.pool.member
	if member == nil {
		return nil
	}
	n.mu.Lock()
	first := n.resumeFrom.IsZero() && n.countFrom.IsZero()
	n.mu.Unlock()
	if !first {
		return nil
	}
	if !member.Settled(n.name) {
		n.logger.Info("waiting for the node's previous reader to hand it over")
		tick := time.NewTicker(handOverPoll)
		defer tick.Stop()
		for !member.Settled(n.name) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	// Where every flow is counted: the previous reader's checkpoint, or, for
	// one that was killed, how far the leader took its records.
	start, ok := member.CountFrom(n.name)
	if ok {
		n.mu.Lock()
		n.countFrom = start
		n.mu.Unlock()
	} else {
		start = n.backfillStart()
	}
	// Written before the first stream: a replica that takes the node over
	// from this one, or joins meanwhile, finds the claim and waits for its
	// release rather than reading the node's buffer again.
	if err := member.Claim(ctx, n.name, start); err != nil {
		return err
	}
	return nil
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
	cfg := n.pool.r.cfg
	req := &observer.GetFlowsRequest{Follow: true}
	if cfg.FieldMask {
		req.FieldMask = &fieldmaskpb.FieldMask{Paths: fieldMaskPaths}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case !n.resumeFrom.IsZero():
		req.Since = timestamppb.New(n.resumeFrom.Add(time.Nanosecond))
	case !n.countFrom.IsZero():
		req.Since = timestamppb.New(n.countFrom.Add(-2 * connectionPeriod))
	case !cfg.Backfill.Enabled:
		req.Since = timestamppb.Now()
	case cfg.Backfill.Number > 0:
		req.Number = cfg.Backfill.Number
	default:
		req.Since = timestamppb.New(time.Now().Add(-cfg.Backfill.Since))
	}
	return req
}

// stream runs one GetFlows stream of the node until it breaks or ctx ends,
// with the receiver's own decoder. A stream that breaks, or does not open, is
// a node error.
func (n *nodeReader) stream(ctx context.Context) (bool, error) {
	if err := n.awaitHandOver(ctx); err != nil {
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
		n.mu.Lock()
		if ts.After(n.resumeFrom) {
			n.resumeFrom = ts
		}
		handedOff = !n.countFrom.IsZero() && !ts.After(n.countFrom)
		n.mu.Unlock()
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

// checkpoint publishes, for each node of a batch that the pipeline took, the
// newest flow handed on.
func (p *nodePool) checkpoint(marks []flowsource.Mark) {
	for _, m := range marks {
		if _, gone := p.deleted.Load(m.Key); gone {
			continue
		}
		p.member.Checkpoint(m.Key, m.Time)
	}
}
