package leaderelectorextension

import (
	"context"
	"time"
)

// The leader elector offers the other components small interfaces, one per
// need; each asks Find for the union of those it uses.

// StartCallback is called, in its own goroutine, each time this replica
// starts leading, with a context that ends the moment it stops leading or
// the collector shuts down. It is an alias, not a defined type, so that a
// library can name the leader elector through an interface of its own that
// spells the plain func type.
type StartCallback = func(ctx context.Context)

// StopCallback is called each time this replica stops leading (an alias, as
// StartCallback is).
type StopCallback = func()

// LeaderElection is the leader elector as contrib's k8s_leader_elector
// offers it: callbacks on the start and the stop of leading.
type LeaderElection interface {
	// SetCallBackFuncs registers onStartedLeading and onStoppedLeading
	// (either may be nil). When this replica leads already,
	// onStartedLeading starts now.
	SetCallBackFuncs(onStartedLeading StartCallback, onStoppedLeading StopCallback)
	// IsLeader reports whether this replica leads now.
	IsLeader() bool
}

// Leadership is what a flow source that the leader reads (Hubble Relay,
// Goldmane) needs to follow leadership: it streams only on the leader, and
// its part of the checkpoint store, keyed by source, passes where the source
// stands from leader to leader with the Lease on a graceful shutdown. Its
// methods are those of the flow sources' checkpoint store
// (flowsource.Checkpoints), which the membership serves for the nodes.
type Leadership interface {
	LeaderElection
	// Take returns, in a term, the time up to which the previous leader
	// wrote every flow of source, when it handed the source over on a
	// graceful shutdown; false when it did not (a crash, a lost lease, a
	// withheld hand-off), and the source reads its backfill.
	Take(ctx context.Context, source string, start time.Time) (countedUpTo time.Time, ok bool, err error)
	// Checkpoint tells the elector that every flow of source up to t was
	// given to the pipeline; the newest is kept.
	Checkpoint(source string, t time.Time)
	// Release tells the elector, from a flow source that stops on shutdown,
	// that its checkpoint is final: the next leader resumes after it,
	// unless a writer withheld the hand-off.
	Release(source string)
}

// Lease is what shares the elector's Lease with it: the replicas' membership,
// which names its own Leases after it and shares keys around its holder; the
// locator of the leader; the writers, which may withhold the hand-off.
type Lease interface {
	Leadership
	// Identity is this replica's in the Lease: "<pod name>_<uuid>", new
	// with each start of the process.
	Identity() string
	// Holder returns the identity of the Lease's holder as this replica last
	// observed it, or "" when none is known.
	Holder() string
	// OnNewHolder registers fn, called with each new holder that the
	// elector observes.
	OnNewHolder(fn func(identity string))
	// LeaseSettings returns the Lease's name, its namespace (resolved: the
	// configured one, else the pod's) and the election's durations.
	LeaseSettings() Settings
	// Withhold tells the elector that the release of this term must not
	// hand the flow stream over: a writer could not write everything it
	// held, and the next leader reads the backfill instead.
	Withhold()
}

// Settings are the Lease's name and namespace and the election's durations.
type Settings struct {
	LeaseName, LeaseNamespace                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}
