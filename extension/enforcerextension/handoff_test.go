package enforcerextension

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestHandOffOnGracefulShutdown: a leader on its way out writes what its
// writers hold, and the next leader resumes the flow stream after the newest
// flow the old one handed on. When a write fails, or no flow source reported,
// the release says nothing and the next leader reads the backfill.
func TestHandOffOnGracefulShutdown(t *testing.T) {
	controlplanetest.Require(t)
	defer func(d time.Duration) { handOffTimeout = d }(handOffTimeout)
	handOffTimeout = time.Second
	pending := types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
	var written atomic.Int32
	var refuse atomic.Bool
	start := func() *enforcer {
		e := startEnforcer(t, "handoff")
		q := e.WriteProposals(nil, func(_ context.Context, key types.NamespacedName, _ ProposalWriter) error {
			if refuse.Load() {
				return errors.New("refused")
			}
			if key == pending {
				written.Add(1)
			}
			return nil
		}, nil)
		q.OnHandOff(func() []types.NamespacedName { return []types.NamespacedName{pending} })
		return e
	}

	a := start()
	waitFor(t, "a to lead", 10*time.Second, a.IsLeader)
	if _, ok := a.ResumeFrom(); ok {
		t.Fatal("the first leader of a new Lease was handed a stream")
	}
	b := start()
	waitFor(t, "b to see the lease held", 10*time.Second, func() bool { return b.observedChanges() > 0 })
	newest := time.Unix(0, time.Now().Add(-time.Minute).UnixNano()) // nanoseconds, no monotonic clock
	a.HandedOn(newest.Add(time.Second))
	a.HandedOn(newest) // of two flow sources, the older newest flow wins
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := written.Load(); n != 1 {
		t.Fatalf("the pending proposal was written %d times on the way out, want once", n)
	}
	waitFor(t, "b to lead", 10*time.Second, b.IsLeader)
	if from, ok := b.ResumeFrom(); !ok || !from.Equal(newest) {
		t.Fatalf("b resumes from %v (%v), want %v: the newest flow that a wrote", from, ok, newest)
	}

	// b's writes fail: it gives the lease up without a hand-off.
	refuse.Store(true)
	b.HandedOn(time.Now())
	c := start()
	waitFor(t, "c to see the lease held", 10*time.Second, func() bool { return c.observedChanges() > 0 })
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c to lead", 10*time.Second, c.IsLeader)
	if from, ok := c.ResumeFrom(); ok {
		t.Fatalf("c resumes from %v after a leader whose writes failed: it must read the backfill", from)
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
