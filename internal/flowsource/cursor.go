package flowsource

import (
	"sync"
	"time"
)

// Cursor is where the stream of one source stands (Hubble Relay's, a Cilium
// node's, Goldmane's): the newest flow received, from which a re-opened
// stream resumes; and, when another reader had the source before (the
// previous leader's hand-off, a node's previous reader's checkpoint), the time
// up to which that reader counted every flow, whose flows then only tell
// connections apart (handed_off). Where a stream starts from these is the
// data plane's (its request, its granularity): each receiver says it.
type Cursor struct {
	mu        sync.Mutex
	newest    time.Time
	countFrom time.Time
}

// Read notes a received flow's time, and reports whether another reader
// counted it already.
func (c *Cursor) Read(ts time.Time) (handedOff bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ts.After(c.newest) {
		c.newest = ts
	}
	return !c.countFrom.IsZero() && !ts.After(c.countFrom)
}

// CountedUpTo says that another reader counted every flow up to t.
func (c *Cursor) CountedUpTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.countFrom = t
}

// Latest is the time of the newest flow received.
func (c *Cursor) Latest() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.newest
}

// Begun reports whether the source was read, here or by the reader that
// handed it off: a stream that breaks from then on misses flows.
func (c *Cursor) Begun() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.newest.IsZero() || !c.countFrom.IsZero()
}

// ResumeAt is where a re-opened stream starts, before which it would miss
// flows: margin before a hand-off not read past yet (the data plane's span in
// which one connection's records follow each other), else the newest flow
// received, which read says was read already (a request that starts after a
// time starts just after it). ok is false when neither is known: the caller
// reads its backfill.
func (c *Cursor) ResumeAt(margin time.Duration) (at time.Time, read, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.countFrom.After(c.newest):
		return c.countFrom.Add(-margin), false, true
	case !c.newest.IsZero():
		return c.newest, true, true
	default:
		return time.Time{}, false, false
	}
}
