package ztunnelreceiver

import (
	"sync"
	"time"
)

// batch is the work of one batch of lines (an OTLP request, a read of a file):
// their events, which the joiner takes at once under one lock, and the
// interner that keeps their strings.
type batch struct {
	names  *interner
	events []event
	// line is the line being decoded: one for the batch, as it would escape to
	// the heap, one allocation a line, if each were its own variable.
	line line
}

// newLine returns b's line, emptied.
func (b *batch) newLine() *line {
	b.line = line{}
	return &b.line
}

// batches are reused, and with them their interners' tables: a node's ends and
// policies are found again in the next batch.
var batches = sync.Pool{New: func() any { return &batch{names: newInterner()} }}

func getBatch() *batch { return batches.Get().(*batch) }

func (b *batch) release() {
	clear(b.events)
	b.events = b.events[:0]
	batches.Put(b)
}

// take converts one decoded line of input in and adds it to b, or counts its
// drop in out.
func (r *ztunnelReceiver) take(b *batch, l *line, in input, now time.Time, out *joined) {
	b.events = append(b.events, event{})
	ev := &b.events[len(b.events)-1]
	reason, ok := r.conv.convert(l, now, ev, b.names)
	if !ok {
		b.events = b.events[:len(b.events)-1]
		if reason == DropAllowDecision {
			b.events = append(b.events, event{kind: kindSeen, received: now})
		}
		out.drops = append(out.drops, reason)
		return
	}
	ev.in, ev.received = in, now
}

// join gives the lines b holds to the joiner, which hands on into out.
func (r *ztunnelReceiver) join(b *batch, out *joined) {
	if len(b.events) == 0 {
		return
	}
	r.joiner.addAll(b.events, out)
	clear(b.events)
	b.events = b.events[:0]
}
