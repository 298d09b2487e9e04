package e2e

import (
	"context"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
)

// TestHandOverCountsEachFlowOnce: the leader of two replicas of the built
// binary is stopped as a deleted pod is (SIGTERM) while it streams. It writes
// what it holds on its way out and hands the stream over with the Lease: the
// new leader resumes after the last flow the old one wrote, instead of reading
// the relay's buffer again. Each flow counts once in the proposals' observed
// edges, before and after the takeover.
func TestHandOverCountsEachFlowOnce(t *testing.T) {
	controlplanetest.Require(t)
	flows, err := dataplanetest.LoadHubble(repoFile(t, dataplanetest.HubbleFixture))
	if err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, "cluster-ca")
	fake := dataplanetest.NewHubbleRelay(flows)
	relay := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, fake) })
	const writer = "\n    observed_interval: 1s"
	start := func(name string) *replica { return startReplica(t, relay.Addr, ca.CertFile, name, "hand-over", writer) }
	// A proposal that another test left listing more edges than this writer
	// lists (max_observed, 32) lists fewer once this leader writes its
	// status, which the totals would read as flows lost: the journey's and
	// the scale-out tests' namespace goes first (this relay's flows have
	// nothing in it).
	resetGuarded(t)
	before := total(observedFlows(t)) // what earlier tests left
	a, b := start("a"), start("b")

	var leader, standby *replica
	waitFor(t, "one replica to lead", time.Minute, func() bool {
		switch {
		case terms(t, a.metrics) > 0:
			leader, standby = a, b
		case terms(t, b.metrics) > 0:
			leader, standby = b, a
		}
		return leader != nil
	})
	learnedBy := settledFlows(t, func(n int64) bool { return n > before })
	learned := total(learnedBy)
	waitFor(t, "the standby to see the lease held", time.Minute, func() bool {
		return standby.counter(t, "network_enforcer_leader_changes_observed") > 0
	})

	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-leader.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the leader did not exit within 30s of SIGTERM:\n%s", leader.output)
	}
	if !strings.Contains(leader.output.String(), "Handing the flow source over with the lease") {
		t.Fatalf("the leader gave the lease up without handing the relay over:\n%s", leader.output)
	}
	waitFor(t, "the standby to resume where the leader's writes stopped", time.Minute, func() bool {
		return strings.Contains(standby.output.String(), "from where the previous leader's writes stopped")
	})
	// One new flow, after the hand-off.
	next := proto.Clone(flows[0]).(*observer.GetFlowsResponse)
	now := timestamppb.Now()
	next.Time, next.GetFlow().Time = now, now
	fake.Push(next)
	afterBy := settledFlows(t, func(n int64) bool { return n > learned })
	// The new flow, frontend to cart, is an edge of both ends' proposals: it
	// counts once in each, and nothing else changes.
	want := map[string]int64{"shop/deployment-frontend-egress": 1, "shop/deployment-cart-ingress": 1}
	for name, n := range afterBy {
		if d := n - learnedBy[name]; d != want[name] {
			t.Errorf("%s: %d observed flows before the takeover, %d after it and one new flow; want %d more",
				name, learnedBy[name], n, want[name])
		}
	}
	t.Logf("observed flows: %d by the first leader, %d after the takeover and one new flow", learned-before, total(afterBy)-before)
}

// total sums observed flows over proposals.
func total(flows map[string]int64) int64 {
	var n int64
	for _, f := range flows {
		n += f
	}
	return n
}

// observedFlows sums the flows of each proposal's observed edges, by
// namespace/name.
func observedFlows(t *testing.T) map[string]int64 {
	t.Helper()
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	if err := env.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, p := range list.Items {
		for _, e := range p.Status.Observed {
			out[p.Namespace+"/"+p.Name] += e.Flows
		}
	}
	return out
}

// settledFlows waits until the observed flows satisfy ready and then do not
// change for five observed intervals, and returns them. Time must pass
// because the writer's observed counts have no telemetry of what is still to
// be written (its unwritten gauge counts edges, not flows): that they are all
// written is seen only as nothing changing.
func settledFlows(t *testing.T, ready func(int64) bool) map[string]int64 {
	t.Helper()
	var n map[string]int64
	stable := time.Now()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := observedFlows(t)
		if !maps.Equal(got, n) || !ready(total(got)) {
			n, stable = got, time.Now()
		}
		if time.Since(stable) > 5*time.Second {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the observed flows never settled (last %v)", n)
		}
		// The poll's own interval, so that the loop does not spin while it
		// waits for the flows to settle.
		time.Sleep(200 * time.Millisecond)
	}
}
