package ztunnelreceiver

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// joiner pairs each policy-decision line with the access line of the same
// connection, which has the destination pod and the real port that the decision
// line lacks. Two lines are of one connection when the decision's inbound.peer is
// the access line's src.addr and the decision was logged within the window of the
// connection's start; a peer address that is reused later is thus not confused.
//
// Lines arrive in either order, so each side waits for the other for the window
// (on the wall clock): an access line stays to be found by later decisions; a
// decision waits for its access line and, when none comes, goes out without a
// destination port and is counted. A denied access line waits too, so that its
// deny decision adds to it rather than reporting the same denial twice.
//
// ztunnel logs policy decisions only when told to (AUTHZ_POLICY_INFO_LOGGING),
// and then for every connection, allowed ones included. So an allowed access line
// is kept only while decision lines are seen: without them there is nothing to
// join, and keeping every connection for the window would be most of the cost of
// a line.
//
// What it holds is bounded, so that a burst cannot grow the heap without limit:
// at most maxHeld access lines and as many decisions in all, and per peer
// address at most maxPerPeer of each, so that finding a line's partner costs
// the same however busy its peer. What goes over a bound leaves early, as if
// its window had passed (a held denial and a waiting decision go out, an
// allowed line, already emitted, is only no longer joinable), and is counted
// in evicted.
type joiner struct {
	window  time.Duration
	maxHeld int
	// decisionsSeen is when the last decision line (of any kind) arrived.
	decisionsSeen time.Time

	mu sync.Mutex
	// accesses is the newest access line held of each peer, by its sequence
	// number in queue; each line has the next older one of its peer.
	accesses  map[peerKey]uint64
	decisions map[peerKey][]heldDecision
	// queue holds the access lines in arrival order, which is the order they
	// expire in, so that expiring costs only what expires.
	queue accessQueue
	// waiting counts the decisions held in decisions.
	waiting int
}

// maxPerPeer is the most access lines, and the most decisions, held for one
// peer address (one source address and port): the connections of one peer
// within a window are few, and a peer that has more (a port reused at once,
// decisions that never find their access line) keeps its newest.
const maxPerPeer = 8

// heldAccess is an access line kept for the window.
type heldAccess struct {
	ev event
	// older is the sequence number of the peer's next older line; 0 or a line
	// that has left the queue ends the peer's list.
	older uint64
	// newest is the newest line of its peer, the one accesses names.
	newest bool
	// held is a denial not yet emitted: it waits for its deny decision.
	held bool
	// denied is a denial already emitted with a deny decision.
	denied bool
}

// heldDecision is a decision line waiting for its access line: its event less
// what a decision line does not have (a destination, a duration) and its peer,
// the key it is held under.
type heldDecision struct {
	time, received time.Time
	policy         *flow.PolicyRef
	src            *endpoint
	srcPort        uint16
	outcome        outcome
	protect        bool
	in             input
}

func heldDecisionOf(ev *event) heldDecision {
	return heldDecision{
		time: ev.time, received: ev.received, policy: ev.policy, src: ev.src, srcPort: ev.srcPort,
		outcome: ev.outcome, protect: ev.protect, in: ev.in,
	}
}

// event is the decision's event again; peer is the key it was held under.
func (d *heldDecision) event(peer peerKey) event {
	return event{
		kind: kindDecision, time: d.time, received: d.received, policy: d.policy, src: d.src, srcPort: d.srcPort,
		peer: peer, outcome: d.outcome, protect: d.protect, in: d.in,
	}
}

// joined is what the joiner hands on after taking a line or a tick: its
// records are written as log records at once, for the batch that emit hands to
// the pipeline.
type joined struct {
	logs plog.Logs
	// records are the log records of logs, n of them.
	records plog.LogRecordSlice
	n       int
	// from counts the records by the input of their line.
	from  [numInputs]int
	drops []flowsource.DropReason
	// unjoined counts decisions that went out without their access line.
	unjoined int
	// evicted counts lines that left the joiner before their window because
	// it held its maximum.
	evicted int
}

// add hands on rec, made from a line of input in.
func (o *joined) add(rec *flow.Record, in input) {
	if o.n == 0 {
		o.logs = plog.NewLogs()
		o.records = o.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	}
	rec.WriteTo(o.records.AppendEmpty())
	o.n++
	o.from[in]++
}

func newJoiner(window time.Duration, maxHeld int) *joiner {
	return &joiner{window: window, maxHeld: maxHeld, accesses: map[peerKey]uint64{}, decisions: map[peerKey][]heldDecision{}}
}

// decisionsHorizon is how long after the last decision line allowed access
// lines are still kept for joining.
const decisionsHorizon = time.Minute

// sawDecision notes a decision line that the joiner does not otherwise take (an
// allow decision): decision logging is on.
func (j *joiner) sawDecision(now time.Time) {
	j.mu.Lock()
	j.decisionsSeen = now
	j.mu.Unlock()
}

// add takes one converted line at wall-clock time now.
func (j *joiner) add(ev *event, now time.Time, out *joined) {
	ev.received = now
	j.addAll([]event{*ev}, out)
}

// addAll takes converted lines in order, each at its received time: a batch
// under one lock. A line of kindSeen only notes a decision line.
func (j *joiner) addAll(evs []event, out *joined) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range evs {
		switch ev := &evs[i]; ev.kind {
		case kindAccess:
			j.addAccess(ev, out)
		case kindDecision:
			j.addDecision(ev, out)
		case kindSeen:
			j.decisionsSeen = ev.received
		}
	}
}

func (j *joiner) addAccess(ev *event, out *joined) {
	a := heldAccess{ev: *ev}
	if waiting, ok := j.decisions[ev.peer]; ok {
		kept := waiting[:0]
		for _, held := range waiting {
			d := held.event(ev.peer)
			if !j.within(d.at(), ev.at()) {
				kept = append(kept, held)
				continue
			}
			j.pair(&a, &d, out)
			j.waiting--
		}
		clear(waiting[len(kept):])
		j.setDecisions(ev.peer, kept)
	}
	switch {
	case ev.outcome != outcomeDenied:
		rec := ev.record()
		out.add(&rec, ev.in)
		if ev.received.Sub(j.decisionsSeen) > decisionsHorizon {
			return
		}
	case !a.denied:
		a.held = true
	}
	a.older, a.newest = j.accesses[ev.peer], true
	if newer := j.queue.at(a.older); newer != nil {
		newer.newest = false
	}
	seq := j.queue.push(a)
	j.accesses[ev.peer] = seq
	// Past maxPerPeer lines the older ones leave the peer's list: they stay
	// queued, so that a held denial among them still goes out when it expires.
	n := 1
	for b := j.queue.at(seq); ; {
		older := j.queue.at(b.older)
		if older == nil {
			break
		}
		n++
		if n > maxPerPeer {
			b.older = 0
			out.evicted++
			break
		}
		b = older
	}
	if j.queue.len() > j.maxHeld {
		j.release(out)
		out.evicted++
	}
}

func (j *joiner) addDecision(ev *event, out *joined) {
	j.decisionsSeen = ev.received
	var best *heldAccess
	var bestGap time.Duration
	at := ev.at()
	for a := j.queue.at(j.accesses[ev.peer]); a != nil; a = j.queue.at(a.older) {
		gap := absDuration(a.ev.at().Sub(at))
		if gap <= j.window && (best == nil || gap < bestGap) {
			best, bestGap = a, gap
		}
	}
	if best == nil {
		j.hold(ev, out)
		return
	}
	j.pair(best, ev, out)
}

// hold keeps a decision until its access line arrives or its window passes.
// Over a bound, the oldest decision of the peer goes out unjoined, or, when all
// the joiner holds is full, the new one does.
func (j *joiner) hold(ev *event, out *joined) {
	ds := j.decisions[ev.peer]
	switch {
	case len(ds) >= maxPerPeer:
		oldest := ds[0].event(ev.peer)
		rec := oldest.record()
		out.add(&rec, oldest.in)
		out.unjoined++
		out.evicted++
		copy(ds, ds[1:])
		ds[len(ds)-1] = heldDecision{}
		ds = ds[:len(ds)-1]
		j.waiting--
	case j.waiting >= j.maxHeld:
		rec := ev.record()
		out.add(&rec, ev.in)
		out.unjoined++
		out.evicted++
		return
	}
	j.decisions[ev.peer] = append(ds, heldDecisionOf(ev))
	j.waiting++
}

// pair emits decision d joined with access line a. An enforced denial and a
// denied access line are one denial: it goes out once.
func (j *joiner) pair(a *heldAccess, d *event, out *joined) {
	if d.protect && a.ev.outcome == outcomeDenied {
		if a.denied {
			out.drops = append(out.drops, DropDuplicateDenial)
			return
		}
		a.held, a.denied = false, true
	}
	rec := a.ev.record()
	rec.Time = d.time
	rec.Outcome = outcomes[d.outcome]
	if d.policy != nil {
		rec.Policy = *d.policy
	}
	out.add(&rec, a.ev.in)
}

// expire hands on what has waited its window by now: decisions without an access
// line, with destination port 0, and denials without a decision.
func (j *joiner) expire(now time.Time, out *joined) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for peer, ds := range j.decisions {
		kept := ds[:0]
		for _, held := range ds {
			if held.received.Add(j.window).After(now) {
				kept = append(kept, held)
				continue
			}
			d := held.event(peer)
			rec := d.record()
			out.add(&rec, d.in)
			out.unjoined++
			j.waiting--
		}
		clear(ds[len(kept):])
		j.setDecisions(peer, kept)
	}
	for a := j.queue.front(); a != nil && !j.expires(&a.ev).After(now); a = j.queue.front() {
		j.release(out)
	}
}

// expires is when a line's window has passed.
func (j *joiner) expires(ev *event) time.Time { return ev.received.Add(j.window) }

// release lets the oldest access line go: a held denial goes out without a
// decision.
func (j *joiner) release(out *joined) {
	a := j.queue.front()
	if a.held {
		rec := a.ev.record()
		out.add(&rec, a.ev.in)
	}
	if a.newest { // the list of its peer is all gone
		delete(j.accesses, a.ev.peer)
	}
	j.queue.pop()
}

// flush hands on everything still waiting, at shutdown.
func (j *joiner) flush(out *joined) {
	j.expire(time.Unix(1<<62, 0), out)
}

func (j *joiner) setDecisions(peer peerKey, ds []heldDecision) {
	if len(ds) == 0 {
		delete(j.decisions, peer)
	} else {
		j.decisions[peer] = ds
	}
}

func (j *joiner) within(a, b time.Time) bool { return absDuration(a.Sub(b)) <= j.window }

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
