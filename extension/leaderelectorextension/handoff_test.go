package leaderelectorextension

import (
	"context"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestHandOffOnGracefulShutdown: a leader on its way out hands the flow
// stream over with the lease, and the next leader resumes after the newest
// flow the old one handed on. When a writer withheld the hand-off, or no flow
// source reported, the release says nothing and the next leader reads the
// backfill.
func TestHandOffOnGracefulShutdown(t *testing.T) {
	controlplanetest.Require(t)
	a := startElector(t, "handoff")
	waitFor(t, "a to lead", 10*time.Second, a.IsLeader)
	if _, ok := a.ResumeFrom(); ok {
		t.Fatal("the first leader of a new Lease was handed a stream")
	}
	b := startElector(t, "handoff")
	waitFor(t, "b to see the lease held", 10*time.Second, func() bool { return b.observedChanges() > 0 })
	newest := time.Unix(0, time.Now().Add(-time.Minute).UnixNano()) // nanoseconds, no monotonic clock
	a.ReadUpTo(newest.Add(time.Second))
	a.ReadUpTo(newest) // of two flow sources, the older newest flow wins
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to lead", 10*time.Second, b.IsLeader)
	if from, ok := b.ResumeFrom(); !ok || !from.Equal(newest) {
		t.Fatalf("b resumes from %v (%v), want %v: the newest flow that a wrote", from, ok, newest)
	}

	// A writer of b could not write everything: b gives the lease up
	// without a hand-off.
	b.ReadUpTo(time.Now())
	b.Withhold()
	c := startElector(t, "handoff")
	waitFor(t, "c to see the lease held", 10*time.Second, func() bool { return c.observedChanges() > 0 })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c to lead", 10*time.Second, c.IsLeader)
	if from, ok := c.ResumeFrom(); ok {
		t.Fatalf("c resumes from %v after a leader whose writes failed: it must read the backfill", from)
	}

	// c's sources report nothing (none follow leadership): no hand-off.
	d := startElector(t, "handoff")
	waitFor(t, "d to see the lease held", 10*time.Second, func() bool { return d.observedChanges() > 0 })
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "d to lead", 10*time.Second, d.IsLeader)
	if from, ok := d.ResumeFrom(); ok {
		t.Fatalf("d resumes from %v after a leader whose sources said nothing", from)
	}
}

func TestParseHandOff(t *testing.T) {
	until := time.Unix(0, 1764635000123456789)
	n, got, ok := parseHandOff(handOffValue(7, until))
	if !ok || n != 7 || !got.Equal(until) {
		t.Fatalf("round trip: %d %v %v", n, got, ok)
	}
	for _, bad := range []string{"", "7", "7_", "_1", "x_1", "7_x", "-1_5", "7_0", "7_-5"} {
		if _, _, ok := parseHandOff(bad); ok {
			t.Errorf("%q parsed as a hand-off", bad)
		}
	}
}
