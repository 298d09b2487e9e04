package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// TestScaleOutLeaderKilled: three replicas; the leader is killed with SIGKILL
// while it holds records that the readers sent it: it took some of the second
// set's learned records (its accepted counter moved past where it stood
// before the push) and dies before it could write them all. Another replica
// leads within a few lease durations, the readers send it what the dead
// leader had not written, and every connection is learned with each flow
// counted once, every violation reported once as an event, and the policy's
// status counts every violation and governed flow once (checkCountedOnce).
func TestScaleOutLeaderKilled(t *testing.T) {
	s, first, perConnection := startKillRun(t)

	const accepted = "network_enforcer_leader_receiver_records_accepted"
	leader := s.leader(t)
	began := leadingTerms(t, s)
	before := leader.counter(t, accepted)

	// The leader dies as soon as it took more records of the second set than
	// its violation candidates, which go at once: learned records too, which
	// the readers' aggregation holds for up to three seconds and the leader
	// writes a second after it takes them. It has not written them yet.
	second := scaleOutFlows().shifted(1000)
	pushed := time.Now()
	s.push(second)
	candidates := int64(len(second))
	// A look every 20 ms, so that the kill comes before the leader writes
	// what it took.
	var took int64
	testwait.Poll(t, fmt.Sprintf("the leader %s to accept more records of the second set than its %d candidates", leader.name, candidates),
		30*time.Second, 20*time.Millisecond, func() bool {
			took = leader.counter(t, accepted)
			return took-before > candidates
		})
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	t.Logf("killed the leader %s %s after the push, once it had accepted %d records (%d before the push, %d of the second set)",
		leader.name, killed.Sub(pushed).Round(time.Millisecond), took, before, took-before)

	var next *scaleOutReplica
	waitFor(t, "another replica to lead", 3*leaseDuration+30*time.Second, func() bool {
		next = newLeader(t, s, leader, began)
		return next != nil
	})
	t.Logf("%s leads %s after the kill", next.name, time.Since(killed).Round(time.Millisecond))
	third := scaleOutFlows().shifted(2000)
	s.push(third)

	checkCountedOnce(t, s, perConnection, first, second, third)
	// The readers sent the new leader again what the dead one took; it
	// skipped, proposal by proposal, what the dead one had written.
	var resent, skipped int64
	for _, r := range s.replicas {
		if r == leader {
			continue
		}
		resent += r.counter(t, "network_enforcer_leader_exporter_records_resent")
		skipped += r.counter(t, "network_enforcer_writer_records_counted_already")
	}
	t.Logf("the readers sent %d records again; the new leader skipped %d that the dead one had written", resent, skipped)
	if resent == 0 {
		t.Error("no reader sent the new leader again what the dead one took")
	}
	// The new leader wrote what it took, and its membership Lease says so:
	// the replicas keep nothing more for a next leader.
	waitFor(t, "the replicas to keep nothing that the new leader wrote", 2*time.Minute, func() bool {
		var kept int64
		for _, r := range s.replicas {
			if r != leader {
				kept += r.counter(t, "network_enforcer_leader_exporter_records_kept")
			}
		}
		return kept == 0
	})
}

// leadingTerms is how many terms of leadership each replica began so far.
func leadingTerms(t *testing.T, s *scaleOut) map[*scaleOutReplica]int64 {
	t.Helper()
	out := map[*scaleOutReplica]int64{}
	for _, r := range s.replicas {
		out[r] = terms(t, r.metrics)
	}
	return out
}

// newLeader is a live replica other than dead that began a term since began
// were counted, or nil while none has.
func newLeader(t *testing.T, s *scaleOut, dead *scaleOutReplica, began map[*scaleOutReplica]int64) *scaleOutReplica {
	t.Helper()
	for _, r := range s.replicas {
		if r == dead {
			continue
		}
		select {
		case <-r.exited:
			continue
		default:
		}
		if terms(t, r.metrics) > began[r] {
			return r
		}
	}
	return nil
}
