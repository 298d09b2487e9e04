package termwriter_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/termcontroller"
	"github.com/kubewarden/network-enforcer/internal/termwriter"
)

// TestWritersDrainInTheirOwnShutdown: on a leader's graceful shutdown, a
// writer writes what it holds in its own Stop, before the extensions shut
// down, and the next leader resumes after the newest flow handed off. When a
// writer could not write everything, its Stop withholds the hand-off, and the
// next leader reads the backfill.
func TestWritersDrainInTheirOwnShutdown(t *testing.T) {
	controlplanetest.Require(t)
	defer func(d time.Duration) { termcontroller.HandOffTimeout = d }(termcontroller.HandOffTimeout)
	termcontroller.HandOffTimeout = time.Second
	pending := types.NamespacedName{Namespace: "shop", Name: "deployment-cart-ingress"}
	var written atomic.Int32
	var refuse atomic.Bool
	queues := map[*replica]termwriter.Queue{}
	n := 0
	start := func() *replica {
		n++
		var q termwriter.Queue
		r := startReplica(t, "writers-handoff", leaderelectorextension.ReplicaName()+"-"+string(rune('a'+n)), func(w termwriter.Writing) {
			q = w.WriteProposals(nil, func(_ context.Context, key types.NamespacedName, _ termwriter.ProposalWriter) error {
				if refuse.Load() {
					return errors.New("refused")
				}
				if key == pending {
					written.Add(1)
				}
				return nil
			}, nil)
		})
		queues[r] = q
		return r
	}
	// shutdown shuts r down as the collector does: the flow source reports,
	// the writer stops, then the extensions.
	shutdown := func(r *replica, newest time.Time) error {
		r.Lease.Checkpoint(flowsource.SourceHubbleRelay, newest)
		r.Lease.Release(flowsource.SourceHubbleRelay)
		werr := queues[r].Stop(context.Background(), []types.NamespacedName{pending})
		r.Stop(t)
		return werr
	}

	a := start()
	waitFor(t, "a to lead", 10*time.Second, a.Lease.IsLeader)
	b := start()
	newest := time.Unix(0, time.Now().Add(-time.Minute).UnixNano()) // nanoseconds, no monotonic clock
	if err := shutdown(a, newest); err != nil {
		t.Fatalf("the writer's Stop on a leader that writes: %v", err)
	}
	if n := written.Load(); n != 1 {
		t.Fatalf("the pending proposal was written %d times on the way out, want once", n)
	}
	waitFor(t, "b to lead", 10*time.Second, b.Lease.IsLeader)
	if from, ok, _ := b.Lease.Take(context.Background(), flowsource.SourceHubbleRelay, time.Time{}); !ok || !from.Equal(newest) {
		t.Fatalf("b resumes from %v (%v), want %v: the newest flow that a wrote", from, ok, newest)
	}

	// b's writes fail: it gives the lease up without a hand-off.
	refuse.Store(true)
	c := start()
	if err := shutdown(b, time.Now()); err == nil {
		t.Fatal("the writer's Stop returned no error for a write that failed")
	}
	waitFor(t, "c to lead", 10*time.Second, c.Lease.IsLeader)
	if from, ok, _ := c.Lease.Take(context.Background(), flowsource.SourceHubbleRelay, time.Time{}); ok {
		t.Fatalf("c resumes from %v after a leader whose writes failed: it must read the backfill", from)
	}
}

// TestAnEarlierVersionsStatusIsTakenOverThroughTheCache: the status owner,
// reading a policy from the enforcer's shared cache as it does in a
// collector, takes over a status that an earlier version wrote by update: a
// condition that it then stops setting is gone. The cache drops managed
// fields; it keeps the mark of the earlier version's update, without which
// that version's ownership would keep the condition.
func TestAnEarlierVersionsStatusIsTakenOverThroughTheCache(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	steps := []func(*v1alpha1.WorkloadNetworkPolicy) bool{
		func(p *v1alpha1.WorkloadNetworkPolicy) bool { // keeps UnusedRules
			return meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionAttributable,
				Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUniqueTarget, ObservedGeneration: p.Generation})
		},
		func(p *v1alpha1.WorkloadNetworkPolicy) bool {
			return meta.RemoveStatusCondition(&p.Status.Conditions, v1alpha1.ConditionUnusedRules)
		},
	}
	var step, done atomic.Int32
	var q termwriter.Queue
	r := startReplica(t, "earlier-version-status", leaderelectorextension.ReplicaName(), func(w termwriter.Writing) {
		q = w.SyncPolicyStatus(nil, func(ctx context.Context, key types.NamespacedName, pw termwriter.PolicyStatusWriter) error {
			if _, err := pw.UpdateStatus(ctx, key, steps[step.Load()]); err != nil {
				return err
			}
			done.Add(1)
			return nil
		})
	})
	waitFor(t, "leadership", 10*time.Second, r.Lease.IsLeader)

	policy := &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "earlier-version"},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: clustertest.CartProposal("x", nil).Spec},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, policy) })
	key := client.ObjectKeyFromObject(policy)
	for _, c := range []string{v1alpha1.ConditionRendered, v1alpha1.ConditionUnusedRules} {
		meta.SetStatusCondition(&policy.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Test"})
	}
	if err := env.Client.Status().Update(ctx, policy, client.FieldOwner(apiwrite.LegacyStatusManager)); err != nil {
		t.Fatal(err)
	}
	// Each step reads the cache's copy, current: a write from a copy that is
	// behind would conflict and read the API server's instead.
	reader := r.Enforcer.(enforcerextension.PolicyReader)
	current := func() bool {
		var live v1alpha1.WorkloadNetworkPolicy
		if err := env.Client.Get(ctx, key, &live); err != nil {
			return false
		}
		cached, ok := reader.Policy(key)
		return ok && cached.ResourceVersion == live.ResourceVersion
	}
	for i := range steps {
		waitFor(t, "the cache to hold the policy as written", 10*time.Second, current)
		step.Store(int32(i))
		q.Enqueue(key, 0)
		waitFor(t, fmt.Sprintf("status write %d", i+1), 10*time.Second, func() bool { return done.Load() == int32(i+1) })
	}

	var got v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionUnusedRules) != nil ||
		meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionRendered) == nil {
		t.Fatalf("conditions %+v: want UnusedRules gone and Rendered kept", got.Status.Conditions)
	}
}
