package leaderelectorextension

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/k8sconfig"
)

// TestOneLeaderAndTakeover: of two replicas on one lease exactly one leads and
// runs the registered functions; when it shuts down, the other takes over and
// the old leader's context has ended.
func TestOneLeaderAndTakeover(t *testing.T) {
	controlplanetest.Require(t)
	a, b := startElector(t, "takeover"), startElector(t, "takeover")
	var runsA, runsB atomic.Int32
	var ctxA context.Context
	ctxCh := make(chan context.Context, 1)
	var stopsA, stopsB atomic.Int32
	a.SetCallBackFuncs(func(ctx context.Context) { runsA.Add(1); ctxCh <- ctx }, func() { stopsA.Add(1) })
	b.SetCallBackFuncs(func(ctx context.Context) { runsB.Add(1); ctxCh <- ctx }, func() { stopsB.Add(1) })

	// A replica leads once its term has started, which is after client-go
	// told both who holds the lease (the hand-off is read first): wait for a
	// leader, then watch the other stay a standby while both compete.
	waitFor(t, "a leader", 10*time.Second, func() bool { return a.IsLeader() || b.IsLeader() })
	waitFor(t, "both to see the lease held", 10*time.Second, func() bool { return a.observedChanges() > 0 && b.observedChanges() > 0 })
	for range 5 { // five retry periods: chances for the standby to take the lease wrongly
		if a.IsLeader() == b.IsLeader() {
			t.Fatalf("leaders: a %v, b %v", a.IsLeader(), b.IsLeader())
		}
		// Time must pass because a standby's failed try to take a held lease
		// leaves no trace to wait on: one retry period is one chance.
		time.Sleep(testConfig("").RetryPeriod)
	}
	leader, standby, standbyRuns, leaderStops := a, b, &runsB, &stopsA
	if b.IsLeader() {
		leader, standby, standbyRuns, leaderStops = b, a, &runsA, &stopsB
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
	if n := leaderStops.Load(); n != 1 {
		t.Fatalf("the old leader's stop callback ran %d times, want once", n)
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
	e := startElector(t, "late")
	waitFor(t, "leadership", 10*time.Second, e.IsLeader)
	ran := make(chan struct{})
	e.SetCallBackFuncs(func(context.Context) { close(ran) }, nil)
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function registered while leading did not run")
	}
}

// TestNoElectionBeforeThePipelinesAreReady: a replica competes for the lease
// only once the collector says its pipelines are ready, so that a leader can
// do a leader's work at once; before that it neither leads nor writes the
// Lease.
func TestNoElectionBeforeThePipelinesAreReady(t *testing.T) {
	controlplanetest.Require(t)
	cfg := testConfig(fmt.Sprintf("not-ready-%d", time.Now().UnixNano())) // no Lease of that name yet
	set := extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = zap.NewNop() // as startElectorWith: client-go logs outlive a test
	l := newElector(set, cfg, func(k8sconfig.APIConfig) (*rest.Config, error) { return env.Config, nil }, ReplicaName())
	if err := l.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	// Time must pass because an elector that does not try leaves no trace to
	// wait on: three retry periods are three chances to take a lease that no
	// one holds.
	time.Sleep(3 * cfg.RetryPeriod)
	var lease coordinationv1.Lease
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: cfg.LeaseName}, &lease)
	if l.IsLeader() || !apierrors.IsNotFound(err) {
		t.Fatalf("before Ready: leading %v, the Lease %v (%v)", l.IsLeader(), lease.Spec.HolderIdentity, err)
	}
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "leadership once ready", 10*time.Second, l.IsLeader)
}
