package hubblereceiver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	peerpb "github.com/cilium/cilium/api/v1/peer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
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

// nodePool is nodes mode: it holds the nodes that the Peer service announced
// and the readers of those that this replica owns.
type nodePool struct {
	r     *hubbleReceiver
	cfg   *NodesConfig
	peers peerpb.PeerClient // the Peer service's client

	mu      sync.Mutex
	host    component.Host
	member  enforcerextension.Membership // nil: every node is read
	running bool                         // between StartStreaming and StopStreaming
	closed  bool
	// announced are the nodes that the Peer service announced, by name.
	announced map[string]peer
	readers   map[string]*nodeReader
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

func newNodePool(r *hubbleReceiver, cfg *NodesConfig, id component.ID, reading metric.Int64Gauge) *nodePool {
	return &nodePool{r: r, cfg: cfg, announced: map[string]peer{}, readers: map[string]*nodeReader{}, reading: reading,
		readingAttr: metric.WithAttributeSet(attribute.NewSet(attribute.String("receiver", id.String())))}
}

func (p *nodePool) dialed(conn *grpc.ClientConn) { p.peers = peerpb.NewPeerClient(conn) }

func (p *nodePool) open(ctx context.Context) (bool, error) { return p.watchPeers(ctx) }

// start follows the Peer service and reads the nodes: those that the
// enforcer's membership gives this replica, and each node's checkpoint
// follows its flows handed on; every node without an enforcer. There is no
// leadership gate: every replica reads its share from start to shutdown.
func (p *nodePool) start(ctx context.Context, host component.Host) error {
	m, err := enforcerextension.FindOptional[enforcerextension.Membership](host, p.r.cfg.Enforcer)
	if err != nil {
		return err
	}
	p.host, p.member, p.running = host, m, true
	if m != nil {
		p.r.OnAccepted(p.checkpoint)
		m.OnMembersChanged(p.rebalance)
	}
	return p.r.GRPCReceiver.Start(ctx, host, nil)
}

// startStreaming opens the Peer service's stream and those of the nodes
// owned.
func (p *nodePool) startStreaming() {
	p.r.GRPCReceiver.StartStreaming()
	p.setRunning(true)
}

// stopStreaming closes the Peer service's stream and every node's, once the
// records received are in the pipeline.
func (p *nodePool) stopStreaming() {
	p.r.GRPCReceiver.StopStreaming()
	p.setRunning(false)
	p.r.Flush()
}

// shutdown stops the Peer service's stream and every node's; the last
// records' checkpoints are published before it returns.
func (p *nodePool) shutdown(ctx context.Context) error {
	p.r.GRPCReceiver.StopStreaming()
	p.close()
	return p.r.GRPCReceiver.Shutdown(ctx)
}

// recordLocked records the number of nodes read, with p.mu held.
func (p *nodePool) recordLocked() {
	p.reading.Record(context.Background(), int64(len(p.readers)), p.readingAttr)
}

// watchPeers is the stream of the Peer service: it applies each change until
// the stream breaks. The nodes read stay read while it reconnects; the new
// stream announces every node again.
func (p *nodePool) watchPeers(ctx context.Context) (bool, error) {
	stream, err := p.peers.Notify(ctx, &peerpb.NotifyRequest{})
	if err != nil {
		return false, err
	}
	received := false
	for {
		cn, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				p.r.Settings.Logger.Warn("the Peer service's stream broke; the nodes found are still read", zap.Error(err))
			}
			return received, err
		}
		received = true
		p.apply(cn)
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
		before, known := p.announced[name]
		p.announced[name] = now
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
		delete(p.announced, name)
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
	n.start(p.announced[name])
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
	for name := range p.announced {
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
	client := p.cfg.ClientConfig
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
