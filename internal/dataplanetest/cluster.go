package dataplanetest

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/cilium/api/v1/observer"
	peerpb "github.com/cilium/cilium/api/v1/peer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// HubbleCluster is a Cilium cluster's Hubble as Hubble Relay sees it: a Hubble
// server on each node (Observer.GetFlows, over TLS with a certificate for the
// node's server name, requiring a client certificate of the cluster's CA) and
// the Peer service that announces the nodes (Peer.Notify, over TLS with a
// certificate for *.default.hubble-grpc.cilium.io, as an agent's Hubble server
// has). Each node serves the responses whose node_name is its name, as a
// HubbleRelay does (since, follow, number, field mask), so that reading the
// nodes and reading a relay can be compared on the same flows.
type HubbleCluster struct {
	// CA signed every certificate of the cluster.
	CA *certtest.CA
	// Client is a client certificate that every server accepts, as Hubble
	// Relay's.
	Client certtest.Pair
	// Peer is the Peer service; PeerAddr the host:port it listens on.
	Peer     *HubblePeer
	PeerAddr string

	peerServer *grpc.Server
	opts       HubbleClusterOptions

	mu        sync.Mutex
	responses []*observer.GetFlowsResponse
	nodes     map[string]*HubbleNode
	closed    bool
}

// HubbleNode is one node's Hubble server.
type HubbleNode struct {
	// Name is the node's name, ServerName the name of its certificate, which
	// the Peer service announces; Addr is where it listens now.
	Name, ServerName, Addr string
	// HubbleRelay serves the node's flows and records the requests: a node's
	// Hubble server speaks the relay's Observer API.
	*HubbleRelay

	cert   certtest.Pair
	server *grpc.Server
	host   string
}

// nodeHost is the address on which the named node listens.
func (c *HubbleCluster) nodeHost(name string) string {
	if c.opts.NodeHost == nil {
		return "127.0.0.1"
	}
	return c.opts.NodeHost(name)
}

// PeerServerName is the name that Hubble Relay verifies in the Peer service's
// certificate, in the cluster named default.
const PeerServerName = "hubble-peer.default.hubble-grpc.cilium.io"

// NodeServerName is the TLS server name of a node's Hubble server, as the
// Peer service announces it (Cilium's peer.TLSServerName for the cluster
// named default).
func NodeServerName(node string) string {
	return strings.ReplaceAll(node, ".", "-") + ".default.hubble-grpc.cilium.io"
}

// HubbleClusterOptions shape a large cluster played by one process.
type HubbleClusterOptions struct {
	// NodeHost is the loopback address on which the named node's Hubble
	// server listens (Linux routes all of 127.0.0.0/8 to lo), so that every
	// node has an address of its own as in a cluster, and thousands of nodes
	// do not share one address's ports; nil: 127.0.0.1 for every node.
	NodeHost func(name string) string
	// Retain is how many of its newest responses each node keeps for the
	// streams that open later, as an agent's ring buffer
	// (hubble.eventBufferCapacity) does; 0 keeps them all.
	Retain int
}

// NewHubbleCluster starts the Peer service and a Hubble server for each node,
// with certificates of ca, each node serving its share of responses. Close
// stops them.
func NewHubbleCluster(ca *certtest.CA, responses []*observer.GetFlowsResponse, nodes ...string) (*HubbleCluster, error) {
	return NewHubbleClusterWith(ca, HubbleClusterOptions{}, responses, nodes...)
}

// NewHubbleClusterWith is NewHubbleCluster with options.
func NewHubbleClusterWith(ca *certtest.CA, opts HubbleClusterOptions, responses []*observer.GetFlowsResponse, nodes ...string) (*HubbleCluster, error) {
	c := &HubbleCluster{CA: ca, Peer: NewHubblePeer(), responses: responses, nodes: map[string]*HubbleNode{}, opts: opts}
	var err error
	if c.Client, err = ca.IssueClient("hubble-relay-client"); err != nil {
		return nil, err
	}
	cert, err := ca.IssueServer("hubble-peer", "*.default.hubble-grpc.cilium.io")
	if err != nil {
		return nil, err
	}
	if c.peerServer, c.PeerAddr, err = c.serve("127.0.0.1", cert, func(s *grpc.Server) { peerpb.RegisterPeerServer(s, c.Peer) }); err != nil {
		return nil, err
	}
	for _, name := range nodes {
		if _, err := c.AddNode(name); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// serve starts a gRPC server with cert on a port of host.
func (c *HubbleCluster) serve(host string, cert certtest.Pair, register func(*grpc.Server)) (*grpc.Server, string, error) {
	lis, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, "", err
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(certtest.ServerTLS(cert, c.CA))))
	register(s)
	go func() { _ = s.Serve(lis) }()
	return s, lis.Addr().String(), nil
}

// AddNode starts a node's Hubble server and announces it (PEER_ADDED).
func (c *HubbleCluster) AddNode(name string) (*HubbleNode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the cluster is closed")
	}
	if _, ok := c.nodes[name]; ok {
		return nil, fmt.Errorf("node %s exists", name)
	}
	var mine []*observer.GetFlowsResponse
	for _, resp := range c.responses {
		if resp.GetNodeName() == name {
			mine = append(mine, resp)
		}
	}
	n := &HubbleNode{Name: name, ServerName: NodeServerName(name), HubbleRelay: NewHubbleRelay(mine), host: c.nodeHost(name)}
	n.retain = c.opts.Retain
	var err error
	if n.cert, err = c.CA.IssueServer("node-"+name, n.ServerName); err != nil {
		return nil, err
	}
	if n.server, n.Addr, err = c.serve(n.host, n.cert, func(s *grpc.Server) { observer.RegisterObserverServer(s, n.HubbleRelay) }); err != nil {
		return nil, err
	}
	c.nodes[name] = n
	c.Peer.Announce(&peerpb.ChangeNotification{Name: name, Address: n.Addr, Type: peerpb.ChangeNotificationType_PEER_ADDED,
		Tls: &peerpb.TLS{ServerName: n.ServerName}})
	return n, nil
}

// DeleteNode announces that the node is gone (PEER_DELETED), then stops its
// server.
func (c *HubbleCluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return
	}
	delete(c.nodes, name)
	c.Peer.Announce(&peerpb.ChangeNotification{Name: name, Type: peerpb.ChangeNotificationType_PEER_DELETED})
	n.server.Stop()
}

// MoveNode starts the node's Hubble server on a new address, announces it
// (PEER_UPDATED), then stops the server on the old one. The node keeps its
// flows and its record of requests.
func (c *HubbleCluster) MoveNode(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[name]
	if !ok {
		return fmt.Errorf("no node %s", name)
	}
	old := n.server
	var err error
	if n.server, n.Addr, err = c.serve(n.host, n.cert, func(s *grpc.Server) { observer.RegisterObserverServer(s, n.HubbleRelay) }); err != nil {
		return err
	}
	c.Peer.Announce(&peerpb.ChangeNotification{Name: name, Address: n.Addr, Type: peerpb.ChangeNotificationType_PEER_UPDATED,
		Tls: &peerpb.TLS{ServerName: n.ServerName}})
	old.Stop()
	return nil
}

// Node returns the node's Hubble server, or nil.
func (c *HubbleCluster) Node(name string) *HubbleNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Push sends each response to the open streams of its node, and keeps it for
// the next ones.
func (c *HubbleCluster) Push(responses ...*observer.GetFlowsResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, resp := range responses {
		if n, ok := c.nodes[resp.GetNodeName()]; ok {
			n.Push(resp)
		}
	}
}

// Close stops every server.
func (c *HubbleCluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for _, n := range c.nodes {
		n.server.Stop()
	}
	c.peerServer.Stop()
}

// HubblePeer is Cilium's Peer service: Notify sends a PEER_ADDED for each node
// known, then each change as it is announced, until the client goes away.
type HubblePeer struct {
	peerpb.UnimplementedPeerServer

	// Opened receives a value each time a Notify stream opens.
	Opened chan struct{}

	mu    sync.Mutex
	peers []*peerpb.ChangeNotification // the nodes known, in the order added
	live  live[*peerpb.ChangeNotification]
}

// NewHubblePeer returns a Peer service that knows no node.
func NewHubblePeer() *HubblePeer {
	return &HubblePeer{Opened: make(chan struct{}, 64)}
}

// Notify serves one stream.
func (p *HubblePeer) Notify(_ *peerpb.NotifyRequest, stream peerpb.Peer_NotifyServer) error {
	p.mu.Lock()
	known := slices.Clone(p.peers)
	changes, cancel := p.live.subscribe()
	p.mu.Unlock()
	defer cancel()
	select {
	case p.Opened <- struct{}{}:
	default:
	}
	for _, cn := range known {
		added := &peerpb.ChangeNotification{Name: cn.GetName(), Address: cn.GetAddress(), Tls: cn.GetTls(),
			Type: peerpb.ChangeNotificationType_PEER_ADDED}
		if err := stream.Send(added); err != nil {
			return err
		}
	}
	return follow(changes, stream.Context().Done(), func(cn *peerpb.ChangeNotification) error {
		if cn == nil { // Break
			return status.Error(codes.Unavailable, "the stream was broken")
		}
		return stream.Send(cn)
	})
}

// Break ends every open Notify stream with an error, as an agent that
// restarts does; the streams opened after it are served as before.
func (p *HubblePeer) Break() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live.push(nil)
}

// Announce sends cn to the open streams, and keeps what it says of the node
// for the next ones.
func (p *HubblePeer) Announce(cn *peerpb.ChangeNotification) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.peers, func(k *peerpb.ChangeNotification) bool { return k.GetName() == cn.GetName() })
	switch {
	case cn.GetType() == peerpb.ChangeNotificationType_PEER_DELETED:
		if i >= 0 {
			p.peers = slices.Delete(p.peers, i, i+1)
		}
	case i >= 0:
		p.peers[i] = cn
	default:
		p.peers = append(p.peers, cn)
	}
	p.live.push(cn)
}
