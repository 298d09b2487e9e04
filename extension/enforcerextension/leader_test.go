package enforcerextension

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestOneLeaderAndTakeover: of two replicas on one lease exactly one leads and
// runs the registered functions; when it shuts down, the other takes over and
// the old leader's context has ended.
func TestOneLeaderAndTakeover(t *testing.T) {
	controlplanetest.Require(t)
	a, b := startEnforcer(t, "takeover"), startEnforcer(t, "takeover")
	var runsA, runsB atomic.Int32
	var ctxA context.Context
	ctxCh := make(chan context.Context, 1)
	a.OnLeading(func(ctx context.Context) { runsA.Add(1); ctxCh <- ctx })
	b.OnLeading(func(ctx context.Context) { runsB.Add(1); ctxCh <- ctx })

	// Once each has seen who holds the lease, each has competed for it.
	waitFor(t, "both to see the lease held", 10*time.Second, func() bool { return a.observedChanges() > 0 && b.observedChanges() > 0 })
	if a.IsLeader() == b.IsLeader() {
		t.Fatalf("leaders: a %v, b %v", a.IsLeader(), b.IsLeader())
	}
	leader, standby, standbyRuns := a, b, &runsB
	if b.IsLeader() {
		leader, standby, standbyRuns = b, a, &runsA
	}
	if standbyRuns.Load() != 0 {
		t.Fatal("the standby ran a leader's function")
	}
	ctxA = <-ctxCh

	start := time.Now()
	if err := leader.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ctxA.Err() == nil {
		t.Fatal("the old leader's context is still alive after shutdown")
	}
	waitFor(t, "the standby to take over", 5*time.Second, standby.IsLeader)
	if standbyRuns.Load() != 1 {
		t.Fatalf("the new leader ran its function %d times", standbyRuns.Load())
	}
	t.Logf("takeover after %s", time.Since(start).Round(time.Millisecond))
}

// TestRegisteringWhileLeadingRunsAtOnce: a component that starts after this
// replica won the lease still runs.
func TestRegisteringWhileLeadingRunsAtOnce(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "late")
	waitFor(t, "leadership", 10*time.Second, e.IsLeader)
	ran := make(chan struct{})
	e.OnLeading(func(context.Context) { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function registered while leading did not run")
	}
}
