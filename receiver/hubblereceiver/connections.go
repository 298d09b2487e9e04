package hubblereceiver

import (
	"sync"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Bounds of the connections remembered. A connection is remembered for between
// one and two periods of flow time after its record: longer than a refused
// SYN's retransmissions (127 s with Linux's default tcp_syn_retries), so that
// one refused attempt is one denial, and short enough that a long-lived
// connection gives a record again every few minutes, which keeps its edge's
// lastSeen current.
const (
	connectionPeriod = 150 * time.Second
	// connectionLimit bounds each generation: past it the generation turns
	// early, which at worst gives a connection a second record.
	connectionLimit = 1 << 20
)

// connections keeps one record per connection out of the events that a Cilium
// agent emits for it: traces at several observation points, a policy verdict at
// each end that enforces policy, a drop notification beside the verdict of each
// refused packet, the retransmissions of a refused SYN, and the same connection
// seen by the agents of both nodes through the relay. A connection is its
// five-tuple, outcome and direction: a denial after an allowed event (allowed
// at the source, refused at the destination) still gives its own record, and
// so does each end's verdict, which that end's policy judges.
//
// Time is the flows' own, so that a backfill and a live stream behave alike.
// In nodes mode the streams of all the nodes that the receiver reads share
// one, so that a connection seen by the agents of both its nodes gives one
// record, as through the relay: its lock keeps the streams' goroutines apart
// (and costs one uncontended lock a flow in relay mode).
type connections struct {
	mu                sync.Mutex
	since             time.Time
	current, previous map[connectionKey]struct{}
}

type connectionKey struct {
	srcAddr, dstAddr string
	srcPort, dstPort uint32
	transport        flow.Transport
	outcome          flow.Outcome
	direction        flow.Direction
}

func newConnections() *connections {
	return &connections{current: map[connectionKey]struct{}{}}
}

// convert maps f into rec as convertFlow does, and drops it as
// dropSameConnection when its connection already gave a record.
func (c *connections) convert(f *flowpb.Flow, rec *flow.Record) (flowsource.DropReason, bool) {
	if reason, ok := convertFlow(f, rec); !ok {
		return reason, false
	}
	if c.seen(rec) {
		return dropSameConnection, false
	}
	return "", true
}

// seen records rec's connection and reports whether it had already given a
// record.
func (c *connections) seen(rec *flow.Record) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gap := rec.Time.Sub(c.since); gap >= connectionPeriod || len(c.current) >= connectionLimit {
		// The current generation holds what came within one period of its
		// start: after two periods without a record it is stale as well.
		c.previous = c.current
		if gap >= 2*connectionPeriod {
			c.previous = nil
		}
		c.current = make(map[connectionKey]struct{}, len(c.current))
		c.since = rec.Time
	}
	k := connectionKey{
		srcAddr: rec.Source.Address, dstAddr: rec.Destination.Address,
		srcPort: rec.Source.Port, dstPort: rec.Destination.Port,
		transport: rec.Transport, outcome: rec.Outcome, direction: rec.Direction,
	}
	if _, ok := c.current[k]; ok {
		return true
	}
	if _, ok := c.previous[k]; ok {
		// Not carried into the current generation: once that one turns, the
		// connection's next event gives a record again.
		return true
	}
	c.current[k] = struct{}{}
	return false
}

// resume sets where req starts (flowsource.Cursor.ResumeAt): two connection
// periods before a hand-off not read past yet, else just after the newest
// flow received. It reports false when neither is known, for the caller's
// backfill.
func resume(c *flowsource.Cursor, req *observer.GetFlowsRequest) bool {
	at, read, ok := c.ResumeAt(2 * connectionPeriod)
	if !ok {
		return false
	}
	if read {
		at = at.Add(time.Nanosecond)
	}
	req.Since = timestamppb.New(at)
	return true
}
