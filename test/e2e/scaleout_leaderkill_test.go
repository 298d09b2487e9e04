package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestScaleOutLeaderKilled: three replicas; the leader is killed with SIGKILL
// while it holds records that the readers sent it: it took some of the second
// set's learned records (its accepted counter moved past where it stood
// before the push) and dies before it could write them all. Another replica
// leads within a few lease durations, the readers send it what the dead
// leader had not written, and every connection is learned with each flow
// counted once and every violation reported once.
func TestScaleOutLeaderKilled(t *testing.T) {
	controlplanetest.Require(t)
	ca := certtest.NewCA(t, "scale-out-ca")
	s := newScaleOut(t, ca, 3, "3s")
	first := scaleOutFlows()
	s.push(first)
	// The flows of one connection as the client's egress counts them, with
	// no replica killed.
	perConnection := s.settle(t, first).flows[int32(first[0].port)]
	if perConnection == 0 {
		t.Fatal("the client's first connection has no observed flows")
	}

	const accepted = "network_enforcer_leader_receiver_records_accepted"
	leader := s.leader(t)
	terms := leadingTerms(s)
	before := leader.counter(t, accepted)

	// The leader dies as soon as it took more records of the second set than
	// its violation candidates, which go at once: learned records too, which
	// the readers' aggregation holds for up to three seconds and the leader
	// writes a second after it takes them. It has not written them yet.
	second := scaleOutFlows().shifted(1000)
	pushed := time.Now()
	s.push(second)
	candidates := int64(len(second))
	var took int64
	deadline := time.Now().Add(30 * time.Second)
	for took = leader.counter(t, accepted); took-before <= candidates; took = leader.counter(t, accepted) {
		if time.Now().After(deadline) {
			t.Fatalf("the leader %s accepted %d records of the second set in 30s, no more than its %d candidates", leader.name, took-before, candidates)
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	t.Logf("killed the leader %s %s after the push, once it had accepted %d records (%d before the push, %d of the second set)",
		leader.name, killed.Sub(pushed).Round(time.Millisecond), took, before, took-before)

	var next *scaleOutReplica
	waitFor(t, "another replica to lead", 3*leaseDuration+30*time.Second, func() bool {
		next = newLeader(s, leader, terms)
		return next != nil
	})
	t.Logf("%s leads %s after the kill", next.name, time.Since(killed).Round(time.Millisecond))
	third := scaleOutFlows().shifted(2000)
	s.push(third)

	all := append(append(append(scaleOutFlowSet{}, first...), second...), third...)
	got := s.settle(t, all)
	// Every connection is a violation of the api's policy, which allows only
	// the client on 8080: the client's on the other ports too.
	violating, reported := len(all), 0
	for port, n := range got.violations {
		reported += n
		if n != 1 {
			t.Errorf("the violation on port %s was reported %d times", port, n)
		}
	}
	t.Logf("%d violations for %d violating connections", reported, violating)
	var wrong []string
	var total, want int64
	for _, c := range all {
		if c.src != caller {
			continue
		}
		n := got.flows[int32(c.port)]
		total, want = total+n, want+perConnection
		if n != perConnection {
			wrong = append(wrong, fmt.Sprintf("%d: %d", c.port, n))
		}
	}
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
	t.Logf("the client's egress counts %d flows of %d pushed", total, want)
	if len(wrong) > 0 {
		t.Errorf("connections counted other than %d flows each, by port: %v", perConnection, wrong)
	}
}

// leadingTerms is how many times each replica has said it leads so far.
func leadingTerms(s *scaleOut) map[*scaleOutReplica]int {
	out := map[*scaleOutReplica]int{}
	for _, r := range s.replicas {
		out[r] = strings.Count(r.output.String(), "Leading:")
	}
	return out
}

// newLeader is a live replica other than dead that said it leads since terms
// were counted, or nil while none has.
func newLeader(s *scaleOut, dead *scaleOutReplica, terms map[*scaleOutReplica]int) *scaleOutReplica {
	for _, r := range s.replicas {
		if r == dead {
			continue
		}
		select {
		case <-r.exited:
			continue
		default:
		}
		if strings.Count(r.output.String(), "Leading:") > terms[r] {
			return r
		}
	}
	return nil
}
