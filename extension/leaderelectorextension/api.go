package leaderelectorextension

import (
	"context"
	"time"
)

// The leader elector offers the other components small interfaces, one per
// need; each asks Find for the union of those it uses.

// StartCallback is called, in its own goroutine, each time this replica
// starts leading, with a context that ends the moment it stops leading or
// the collector shuts down.
type StartCallback func(ctx context.Context)

// StopCallback is called each time this replica stops leading.
type StopCallback func()

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

// Leadership is what a flow source needs to follow leadership: it streams
// only on the leader, and a graceful hand-off passes the stream's position
// on with the lease.
type Leadership interface {
	LeaderElection
	// ResumeFrom returns, in a term, the time up to which the previous
	// leader wrote every flow it received, when it handed the stream over on
	// a graceful shutdown; false when it did not (a crash, a lost lease), and
	// a flow source reads its backfill.
	ResumeFrom() (time.Time, bool)
	// ReadUpTo tells the elector, from a flow source that stops on shutdown,
	// that it read every flow up to newest and gave it to the pipeline: the
	// next leader resumes after it, unless a writer withheld the hand-off.
	ReadUpTo(newest time.Time)
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
