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
type joiner struct {
	window time.Duration

	mu        sync.Mutex
	accesses  map[string][]*heldAccess
	decisions map[string][]*heldDecision
}

type heldAccess struct {
	ev      event
	expires time.Time
	// held is a denial not yet emitted: it waits for its deny decision.
	held bool
	// denied is a denial already emitted with a deny decision.
	denied bool
}

type heldDecision struct {
	ev      event
	expires time.Time
}

// joined is what the joiner hands on after taking a line or a tick.
type joined struct {
	records []flow.Record
	drops   []flowsource.DropReason
	// unjoined counts decisions that went out without their access line.
	unjoined int
}

func newJoiner(window time.Duration) *joiner {
	return &joiner{window: window, accesses: map[string][]*heldAccess{}, decisions: map[string][]*heldDecision{}}
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
	isDenial := ev.rec.Outcome == flow.OutcomeDenied
	waiting := j.decisions[ev.peer]
	kept := waiting[:0]
	for _, d := range waiting {
		if !j.within(d.ev.at, ev.at) {
			kept = append(kept, d)
			continue
		}
		j.pair(a, &d.ev, out)
	}
	j.setDecisions(ev.peer, kept)
	switch {
	case !isDenial:
		out.records = append(out.records, ev.rec)
	case !a.denied:
		a.held = true
	}
	j.accesses[ev.peer] = append(j.accesses[ev.peer], a)
}

func (j *joiner) addDecision(ev *event, now time.Time, out *joined) {
	var best *heldAccess
	var bestGap time.Duration
	for _, a := range j.accesses[ev.peer] {
		gap := absDuration(a.ev.at.Sub(ev.at))
		if gap <= j.window && (best == nil || gap < bestGap) {
			best, bestGap = a, gap
		}
	}
	if best == nil {
		j.decisions[ev.peer] = append(j.decisions[ev.peer], &heldDecision{ev: *ev, expires: now.Add(j.window)})
		return
	}
	j.pair(best, ev, out)
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
	out.records = append(out.records, rec)
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
			out.records = append(out.records, d.ev.rec)
			out.unjoined++
		}
		j.setDecisions(peer, kept)
	}
	for peer, as := range j.accesses {
		kept := as[:0]
		for _, a := range as {
			if a.expires.After(now) {
				kept = append(kept, a)
				continue
			}
			if a.held {
				out.records = append(out.records, a.ev.rec)
			}
		}
		if len(kept) == 0 {
			delete(j.accesses, peer)
		} else {
			j.accesses[peer] = kept
		}
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
