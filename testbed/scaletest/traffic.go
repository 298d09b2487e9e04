package main

import (
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/testbed/fakecluster"
)

// edge is one distinct edge of the traffic: a client workload's connections
// to a server workload's port, each between one pod of each, on the client
// pod's node.
type edge struct {
	src, dst int // workload indexes
	srcPod   int // the client's pod, on the node that emits the edge
	port     uint32
	// conns counts the connections sent, flows their flow messages.
	conns, flows atomic.Int64
	// first is when its first connection was sent (unix nanoseconds; 0: not
	// yet).
	first atomic.Int64
	// node is the node that emits it; sent the time of each connection's
	// first flow, appended by the one goroutine that sends the node's
	// connections and read once the traffic stopped.
	node int
	sent []time.Time
	// portOffset is where its connections' source ports start.
	portOffset uint64
}

// traffic is the cluster's edges, each node's share of them, and the pacing
// of the flows.
type traffic struct {
	workloads []fakecluster.Workload
	edges     []*edge
	// byNode[n] are the edges whose connections node n emits.
	byNode [][]*edge
	// flowsPerConn is how many flow messages one connection makes.
	flowsPerConn int
	sent         atomic.Int64
	// firstFlow[w] is when workload w's first connection was sent (unix
	// nanoseconds; 0: never).
	firstFlow []atomic.Int64
}

// Linux's ephemeral ports (net.ipv4.ip_local_port_range's default).
const (
	firstEphemeralPort = 32768
	ephemeralPorts     = 60999 - firstEphemeralPort + 1
)

// hash is a stable number for s.
func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// newTraffic gives each workload minPeers..maxPeers servers among the other
// workloads (so that each is a client of a few to a few dozen peers and the
// server of about as many), on one port per server.
//
// Only the share clients of the workloads (by a hash of the name) are
// clients; the others are servers only, or have no flows.
func newTraffic(workloads []fakecluster.Workload, nodes, minPeers, maxPeers int, clients float64) *traffic {
	t := &traffic{workloads: workloads, byNode: make([][]*edge, nodes), firstFlow: make([]atomic.Int64, len(workloads))}
	t.flowsPerConn = len(dataplanetest.NewHubbleConnection(dataplanetest.End{}, dataplanetest.End{}, 1, 1, dataplanetest.ConnectionUnenforced))
	n := len(workloads)
	for w := range workloads {
		if len(workloads[w].Pods) == 0 || n < 2 {
			continue
		}
		h := hash(workloads[w].Namespace + "/" + workloads[w].Name)
		if float64(h%10000) >= clients*10000 {
			continue
		}
		peers := minPeers + int(h%uint64(maxPeers-minPeers+1))
		seen := map[int]bool{w: true}
		for k := 0; len(seen) <= min(peers, n-1); k++ {
			dst := int((h>>8 + uint64(k)*2654435761) % uint64(n))
			if seen[dst] || len(workloads[dst].Pods) == 0 {
				if k > 10*peers {
					break
				}
				continue
			}
			seen[dst] = true
			// The client's pods in turn; the client pod's node emits it.
			e := &edge{src: w, dst: dst, srcPod: k % len(workloads[w].Pods), port: 8080 + uint32(dst%8)}
			e.node = workloads[w].Pods[e.srcPod].Node
			e.portOffset = hash(strconv.Itoa(w) + ">" + strconv.Itoa(dst))
			t.edges = append(t.edges, e)
			node := e.node
			t.byNode[node] = append(t.byNode[node], e)
		}
	}
	return t
}

// end is pod p of workload w as a flow names it.
func (t *traffic) end(w, p int) dataplanetest.End {
	wl := t.workloads[w]
	pod := wl.Pods[p%len(wl.Pods)]
	return dataplanetest.End{Namespace: wl.Namespace, Pod: pod.Name, IP: pod.IP, Workload: wl.Name, Identity: uint32(10000 + w)}
}

// connection is the flows of e's next connection, on node, each after
// *newest, which it moves to its last.
//
// A node's flows come in the order of their times: the agent stamps each
// event as it queues it for Hubble, under one lock (cilium
// pkg/hubble/monitor/consumer.go, sendEvent), and its ring buffer keeps them
// in that order. Connections built one after another here overlap in time
// (each spans its flows' microseconds from its start), so each is moved to
// start after the node's newest flow.
func (t *traffic) connection(e *edge, node string, newest *time.Time) []*observer.GetFlowsResponse {
	k := int(e.conns.Load())
	// Linux picks a connection's source port by a hash of its destination
	// plus a counter (RFC 6056's double-hash algorithm), so that one
	// client's connections to one server take ports in turn: one port again
	// only after all the others. One counter shared by every connection
	// came back to an edge's port whenever the edge's period met the
	// counter's turn (45 s at 500 nodes), and with it to the connection's
	// five-tuple, which the receiver tells apart from the one before only
	// after one to two connection periods.
	port := firstEphemeralPort + uint32((e.portOffset+uint64(k))%ephemeralPorts)
	msgs := dataplanetest.NewHubbleConnection(t.end(e.src, e.srcPod), t.end(e.dst, k), port, e.port, dataplanetest.ConnectionUnenforced)
	var shift time.Duration
	if first := msgs[0].GetFlow().GetTime().AsTime(); !first.After(*newest) {
		shift = newest.Sub(first) + time.Microsecond
	}
	e.sent = append(e.sent, msgs[0].GetFlow().GetTime().AsTime().Add(shift))
	for _, m := range msgs {
		m.NodeName = node
		if f := m.GetFlow(); f != nil {
			f.NodeName = node
			f.Time = timestamppb.New(f.GetTime().AsTime().Add(shift))
			m.Time = f.Time
			*newest = f.Time.AsTime()
		}
	}
	return msgs
}

// pusher is where a node's flows go: its Hubble server's name now (a
// replaced node has a new one) and its push.
type pusher interface {
	nodeName(i int) string
	push(i int, msgs []*observer.GetFlowsResponse)
}

// run sends rate flows per node per second until stop is closed, each node
// going through its edges in turn, from workers goroutines.
func (t *traffic) run(stop <-chan struct{}, to pusher, rate float64, workers int) {
	const tick = 200 * time.Millisecond
	perTick := rate / float64(t.flowsPerConn) * tick.Seconds() // connections per node per tick
	var wg sync.WaitGroup
	nodes := len(t.byNode)
	for g := range workers {
		wg.Go(func() {
			credit := make([]float64, nodes)
			next := make([]int, nodes)
			newest := make([]time.Time, nodes) // each node's newest flow

			// Spread the nodes' first connections over the first tick.
			for n := g; n < nodes; n += workers {
				credit[n] = perTick * float64(hash(strconv.Itoa(n))%1000) / 1000
			}
			ticker := time.NewTicker(tick)
			defer ticker.Stop()
			for {
				select {
				case <-stop:
					return
				case <-ticker.C:
				}
				for n := g; n < nodes; n += workers {
					edges := t.byNode[n]
					if len(edges) == 0 {
						continue
					}
					credit[n] += perTick
					name := to.nodeName(n)
					var msgs []*observer.GetFlowsResponse
					for ; credit[n] >= 1; credit[n]-- {
						e := edges[next[n]%len(edges)]
						next[n]++
						msgs = append(msgs, t.connection(e, name, &newest[n])...)
						now := time.Now().UnixNano()
						e.first.CompareAndSwap(0, now)
						t.firstFlow[e.src].CompareAndSwap(0, now)
						t.firstFlow[e.dst].CompareAndSwap(0, now)
						e.conns.Add(1)
						e.flows.Add(int64(t.flowsPerConn))
					}
					if len(msgs) > 0 {
						to.push(n, msgs)
						t.sent.Add(int64(len(msgs)))
					}
				}
			}
		})
	}
	wg.Wait()
}
