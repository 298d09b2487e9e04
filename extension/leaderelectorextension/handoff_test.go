package leaderelectorextension

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestHandOffOnGracefulShutdown: a leader on its way out hands each flow
// source that it released over with the lease, and the next leader resumes
// each after the newest flow the old one handed on of it. When a writer
// withheld the hand-off, or no flow source released, the release says nothing
// and the next leader reads the backfill.
func TestHandOffOnGracefulShutdown(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	take := func(l *elector, source string) (time.Time, bool) {
		t.Helper()
		from, ok, err := l.Take(ctx, source, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return from, ok
	}
	a := startElector(t, "handoff")
	waitFor(t, "a to lead", 10*time.Second, a.IsLeader)
	if _, ok := take(a, "hubble-relay"); ok {
		t.Fatal("the first leader of a new Lease was handed a source")
	}
	b := startElector(t, "handoff")
	waitFor(t, "b to see the lease held", 10*time.Second, func() bool { return b.observedChanges() > 0 })
	relay := time.Unix(0, time.Now().Add(-time.Minute).UnixNano()) // nanoseconds, no monotonic clock
	goldmane := relay.Add(-time.Hour)
	a.Checkpoint("hubble-relay", relay.Add(-time.Second))
	a.Checkpoint("hubble-relay", relay) // the newest of a source is kept
	a.Checkpoint("goldmane", goldmane)
	a.Checkpoint("unreleased", relay) // a source that did not stop is not handed on
	a.Release("hubble-relay")
	a.Release("goldmane")
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to lead", 10*time.Second, b.IsLeader)
	if from, ok := take(b, "hubble-relay"); !ok || !from.Equal(relay) {
		t.Fatalf("b resumes the relay from %v (%v), want %v: the newest flow that a wrote of it", from, ok, relay)
	}
	if from, ok := take(b, "goldmane"); !ok || !from.Equal(goldmane) {
		t.Fatalf("b resumes Goldmane from %v (%v), want %v: each source is its own", from, ok, goldmane)
	}
	if from, ok := take(b, "unreleased"); ok {
		t.Fatalf("b was handed %v of a source that a did not release", from)
	}

	// A writer of b could not write everything: b gives the lease up
	// without a hand-off.
	b.Checkpoint("hubble-relay", time.Now())
	b.Release("hubble-relay")
	b.Withhold()
	c := startElector(t, "handoff")
	waitFor(t, "c to see the lease held", 10*time.Second, func() bool { return c.observedChanges() > 0 })
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c to lead", 10*time.Second, c.IsLeader)
	for _, source := range []string{"hubble-relay", "goldmane"} {
		if from, ok := take(c, source); ok {
			t.Fatalf("c resumes %s from %v after a leader whose writes failed: it must read the backfill", source, from)
		}
	}

	// c's sources release nothing (none follow leadership): no hand-off,
	// and the labels of earlier terms are cleared.
	d := startElector(t, "handoff")
	waitFor(t, "d to see the lease held", 10*time.Second, func() bool { return d.observedChanges() > 0 })
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "d to lead", 10*time.Second, d.IsLeader)
	if from, ok := take(d, "hubble-relay"); ok {
		t.Fatalf("d resumes from %v after a leader whose sources said nothing", from)
	}
	l, err := d.cs.CoordinationV1().Leases(d.lock.LeaseMeta.Namespace).Get(ctx, d.lock.LeaseMeta.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range l.Labels {
		if strings.HasPrefix(k, CheckpointLabelPrefix) && v != "" {
			t.Errorf("label %s=%q of an earlier term is still set", k, v)
		}
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
