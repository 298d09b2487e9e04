package ztunnelreceiver

import (
	"sync"
	"time"

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

	mu        sync.Mutex
	accesses  map[string]*heldAccess
	decisions map[string][]*heldDecision
	// queue holds the access lines in arrival order, which is the order they
	// expire in, so that expiring costs only what expires.
	queue []*heldAccess
	// waiting counts the decisions held in decisions.
	waiting int
}

// maxPerPeer is the most access lines, and the most decisions, held for one
// peer address (one source address and port): the connections of one peer
// within a window are few, and a peer that has more (a port reused at once,
// decisions that never find their access line) keeps its newest.
const maxPerPeer = 8

// heldAccess is an access line kept for the window; the lines of one peer
// address form a list, newest first.
type heldAccess struct {
	ev      event
	expires time.Time
	older   *heldAccess
	// held is a denial not yet emitted: it waits for its deny decision.
	held bool
	// denied is a denial already emitted with a deny decision.
	denied bool
	// gone is set when the line has expired.
	gone bool
}

type heldDecision struct {
	ev      event
	expires time.Time
}

// joined is what the joiner hands on after taking a line or a tick.
type joined struct {
	records []flow.Record
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
func (o *joined) add(rec flow.Record, in input) {
	o.records = append(o.records, rec)
	o.from[in]++
}

func newJoiner(window time.Duration, maxHeld int) *joiner {
	return &joiner{window: window, maxHeld: maxHeld, accesses: map[string]*heldAccess{}, decisions: map[string][]*heldDecision{}}
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
	j.mu.Lock()
	defer j.mu.Unlock()
	if ev.kind == kindAccess {
		j.addAccess(ev, now, out)
	} else {
		j.addDecision(ev, now, out)
	}
}

func (j *joiner) addAccess(ev *event, now time.Time, out *joined) {
	a := &heldAccess{ev: *ev, expires: now.Add(j.window)}
	if waiting, ok := j.decisions[ev.peer]; ok {
		kept := waiting[:0]
		for _, d := range waiting {
			if !j.within(d.ev.at, ev.at) {
				kept = append(kept, d)
				continue
			}
			j.pair(a, &d.ev, out)
			j.waiting--
		}
		j.setDecisions(ev.peer, kept)
	}
	switch {
	case ev.rec.Outcome != flow.OutcomeDenied:
		out.add(ev.rec, ev.in)
		if now.Sub(j.decisionsSeen) > decisionsHorizon {
			return
		}
	case !a.denied:
		a.held = true
	}
	a.older = j.accesses[ev.peer]
	j.accesses[ev.peer] = a
	// Past maxPerPeer lines the older ones leave the peer's list: they stay
	// queued, so that a held denial among them still goes out when it expires.
	n := 1
	for b := a; b.older != nil && !b.older.gone; b = b.older {
		n++
		if n > maxPerPeer {
			b.older = nil
			out.evicted++
			break
		}
	}
	j.queue = append(j.queue, a)
	if len(j.queue) > j.maxHeld {
		j.release(j.queue[0], out)
		j.queue[0] = nil
		j.queue = j.queue[1:]
		out.evicted++
	}
}

func (j *joiner) addDecision(ev *event, now time.Time, out *joined) {
	j.decisionsSeen = now
	var best *heldAccess
	var bestGap time.Duration
	for a := j.accesses[ev.peer]; a != nil && !a.gone; a = a.older {
		gap := absDuration(a.ev.at.Sub(ev.at))
		if gap <= j.window && (best == nil || gap < bestGap) {
			best, bestGap = a, gap
		}
	}
	if best == nil {
		j.hold(ev, now, out)
		return
	}
	j.pair(best, ev, out)
}

// hold keeps a decision until its access line arrives or its window passes.
// Over a bound, the oldest decision of the peer goes out unjoined, or, when all
// the joiner holds is full, the new one does.
func (j *joiner) hold(ev *event, now time.Time, out *joined) {
	ds := j.decisions[ev.peer]
	switch {
	case len(ds) >= maxPerPeer:
		out.add(ds[0].ev.rec, ds[0].ev.in)
		out.unjoined++
		out.evicted++
		copy(ds, ds[1:])
		ds = ds[:len(ds)-1]
		j.waiting--
	case j.waiting >= j.maxHeld:
		out.add(ev.rec, ev.in)
		out.unjoined++
		out.evicted++
		return
	}
	j.decisions[ev.peer] = append(ds, &heldDecision{ev: *ev, expires: now.Add(j.window)})
	j.waiting++
}

// pair emits decision d joined with access line a. An enforced denial and a
// denied access line are one denial: it goes out once.
func (j *joiner) pair(a *heldAccess, d *event, out *joined) {
	if d.protect && a.ev.rec.Outcome == flow.OutcomeDenied {
		if a.denied {
			out.drops = append(out.drops, DropDuplicateDenial)
			return
		}
		a.held, a.denied = false, true
	}
	rec := a.ev.rec
	rec.Time = d.rec.Time
	rec.Outcome = d.rec.Outcome
	if !d.rec.Policy.IsZero() {
		rec.Policy = d.rec.Policy
	}
	out.add(rec, a.ev.in)
}

// expire hands on what has waited its window by now: decisions without an access
// line, with destination port 0, and denials without a decision.
func (j *joiner) expire(now time.Time, out *joined) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for peer, ds := range j.decisions {
		kept := ds[:0]
		for _, d := range ds {
			if d.expires.After(now) {
				kept = append(kept, d)
				continue
			}
			out.add(d.ev.rec, d.ev.in)
			out.unjoined++
			j.waiting--
		}
		j.setDecisions(peer, kept)
	}
	n := 0
	for ; n < len(j.queue) && !j.queue[n].expires.After(now); n++ {
		j.release(j.queue[n], out)
		j.queue[n] = nil
	}
	j.queue = j.queue[n:]
}

// release lets the oldest access line go: a held denial goes out without a
// decision.
func (j *joiner) release(a *heldAccess, out *joined) {
	a.gone, a.older = true, nil // everything older has gone before it
	if a.held {
		out.add(a.ev.rec, a.ev.in)
	}
	if j.accesses[a.ev.peer] == a { // the newest of its peer: the list is all gone
		delete(j.accesses, a.ev.peer)
	}
}

// flush hands on everything still waiting, at shutdown.
func (j *joiner) flush(out *joined) {
	j.expire(time.Unix(1<<62, 0), out)
}

func (j *joiner) setDecisions(peer string, ds []*heldDecision) {
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
