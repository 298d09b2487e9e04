package flowsource

import (
	"context"
	"time"
)

// Keys of the sources that the leader reads, in the checkpoint store; a
// Cilium node read directly is keyed by its name.
const (
	SourceHubbleRelay = "hubble-relay"
	SourceGoldmane    = "goldmane"
)

// Checkpoints is the one store of where each flow source stands, keyed by
// source: how far its reader handed flows to the pipeline, so that the
// source's next reader resumes there and does not count again what the
// previous one counted. The leader elector serves the sources that the
// leader reads (Hubble Relay, Goldmane), handed on with the leader Lease's
// release; the membership serves the nodes that the replicas share, on their
// membership Leases.
type Checkpoints interface {
	// Take makes this replica source's reader. It returns, once the
	// previous reader's checkpoint is final, the time up to which every
	// flow of source is counted; ok is false when none is known, and the
	// reader reads its backfill, which starts at start. It fails only when
	// ctx ends first.
	Take(ctx context.Context, source string, start time.Time) (countedUpTo time.Time, ok bool, err error)
	// Checkpoint records that every flow of source up to t was handed to
	// the pipeline.
	Checkpoint(source string, t time.Time)
	// Release says that this replica stopped reading source: its
	// checkpoint is final, for the next reader.
	Release(source string)
}

// Take takes source in store for c's reader: every flow up to where the
// previous reader counted is then handed_off (Read), and a stream resumes
// there (ResumeAt). A nil store has no previous reader.
func (c *Cursor) Take(ctx context.Context, store Checkpoints, source string, start time.Time) error {
	if store == nil {
		return nil
	}
	t, ok, err := store.Take(ctx, source, start)
	if err != nil {
		return err
	}
	if ok {
		c.CountedUpTo(t)
	}
	return nil
}

// Release hands source on in store at its reader's shutdown, once every
// flow received is in the pipeline: its checkpoint is the newest flow
// received, or what this reader was handed when it received nothing newer.
func (c *Cursor) Release(store Checkpoints, source string) {
	if store == nil {
		return
	}
	c.mu.Lock()
	through := c.newest
	if c.countFrom.After(through) {
		through = c.countFrom
	}
	c.mu.Unlock()
	if !through.IsZero() {
		store.Checkpoint(source, through)
	}
	store.Release(source)
}
