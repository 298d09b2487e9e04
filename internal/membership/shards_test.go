package membership

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// shardLeases lists the checkpoint shards of membership Lease lease.
func shardLeases(t *testing.T, lease string) []coordinationv1.Lease {
	t.Helper()
	var list coordinationv1.LeaseList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default"),
		client.MatchingLabels{v1alpha1.ShardOfLabel: lease}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestShardsFollowTheKeys: a replica whose checkpoints outgrow its Lease
// writes checkpoint shards; a run of the same pod's collector that follows a
// killed one keeps every checkpoint that the shards published; and when the
// keys are forgotten (their nodes gone) the shards are deleted and the others
// read the one key left.
func TestShardsFollowTheKeys(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "shards-" + suffix
	ms := joinMembers(t, lease, "reader-"+suffix, "other-"+suffix)
	reader, other := ms[0], ms[1]
	waitMembers(t, "two members", reader, other)
	nodes := nodeNames(3000)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, k := range nodes {
		reader.Checkpoint(k, t0)
	}
	name := memberLeaseName(lease, "reader-"+suffix)
	waitFor(t, "every checkpoint to reach the other member", memberWait, func() bool {
		for _, k := range nodes {
			if got, ok := other.CheckpointOf(k); !ok || !got.Equal(t0) {
				return false
			}
		}
		return true
	})
	shards := len(shardLeases(t, name))
	if shards < 2 {
		t.Fatalf("3,000 checkpoints in %d shard", shards)
	}

	// The collector is killed and its pod's next run joins: what the
	// earlier run published, its shards included, stays published.
	reader.Stop(context.Background(), false)
	again := startMember(t, lease, "reader-"+suffix)
	waitFor(t, "the next run to renew", memberWait, func() bool {
		again.mu.Lock()
		defer again.mu.Unlock()
		return !again.renewed.IsZero()
	})
	for _, k := range nodes {
		if got, ok := again.CheckpointOf(k); !ok || !got.Equal(t0) {
			t.Fatalf("the next run lost %s: %v %v", k, got, ok)
		}
	}

	// Every key but one is forgotten: the shards go, and the one left stays.
	for _, k := range nodes[1:] {
		again.Forget(k)
	}
	waitFor(t, "the shards but the first to be deleted", memberWait, func() bool { return len(shardLeases(t, name)) == 1 })
	waitFor(t, "the other member to read the one key left", memberWait, func() bool {
		_, gone := other.CheckpointOf(nodes[1])
		got, ok := other.CheckpointOf(nodes[0])
		return ok && got.Equal(t0) && !gone
	})
	t.Logf("3,000 checkpoints took %d shards", shards)
}

// publishedCheckpoints is what membership Lease lease and its shards, as the
// API server holds them, publish as checkpoints.
func publishedCheckpoints(t *testing.T, lease string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	l, ok := getLease(t, lease)
	if !ok {
		return out
	}
	for k, v := range parseCheckpoints(l.Annotations[v1alpha1.CheckpointsAnnotation]) {
		out[k] = v
	}
	for _, s := range shardLeases(t, lease) {
		for k, v := range parseCheckpoints(s.Annotations[v1alpha1.CheckpointsAnnotation]) {
			out[k] = v
		}
	}
	return out
}

// TestRenewalsPublishWhatAHandOffNeeds: the membership Lease, renewed every
// retry period, carries no checkpoints. Its shards are written with a renewal
// only when a hand-off needs them at once (a claim, a release; the leader's
// counts: TestCountsGoOnceAReaderStopsRenewing), or a lease duration after
// they were last written: a live reader's checkpoint that only advanced
// waits, for the bytes that every renewal would otherwise write.
func TestRenewalsPublishWhatAHandOffNeeds(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "publish-" + suffix
	// A lease far longer than the renewals watched below.
	cfg := testConfig(lease, "reader-"+suffix)
	cfg.LeaseDuration, cfg.RenewDeadline = 5*time.Minute, 2*time.Second
	m := startMemberWith(t, cfg)
	waitMembers(t, "the member", m)
	name := memberLeaseName(lease, "reader-"+suffix)
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), memberWait)
	defer cancel()
	if err := m.Claim(ctx, "node-a", t0); err != nil {
		t.Fatal(err)
	}
	claimed, ok := getLease(t, shardLeaseName(name, 0))
	if !ok || !publishedCheckpoints(t, name)["node-a"].Equal(t0) {
		t.Fatalf("the claim is not in the first shard: %v", publishedCheckpoints(t, name))
	}

	// The checkpoint advances: five renewals later the shard is as the
	// claim wrote it, and the membership Lease still holds no checkpoint.
	m.Checkpoint("node-a", t0.Add(time.Second))
	renewals := map[time.Time]bool{}
	waitFor(t, "five renewals", memberWait, func() bool {
		if l, ok := getLease(t, name); ok && l.Spec.RenewTime != nil {
			renewals[l.Spec.RenewTime.Time] = true
		}
		return len(renewals) >= 5
	})
	if s, _ := getLease(t, shardLeaseName(name, 0)); s.ResourceVersion != claimed.ResourceVersion {
		t.Fatalf("the shard was written for a checkpoint that only advanced: %v", publishedCheckpoints(t, name))
	}
	if l, _ := getLease(t, name); l.Annotations[v1alpha1.CheckpointsAnnotation] != "" || l.Annotations[v1alpha1.CountedAnnotation] != "" {
		t.Fatalf("the membership Lease carries checkpoints: %v", l.Annotations)
	}

	// A release goes with the next renewal, and the advanced checkpoint
	// with it.
	m.Release("node-a")
	waitFor(t, "the release and the advanced checkpoint published", memberWait, func() bool {
		s, ok := getLease(t, shardLeaseName(name, 0))
		return ok && parseReleased(s.Annotations[v1alpha1.ReleasedAnnotation])["node-a"] &&
			publishedCheckpoints(t, name)["node-a"].Equal(t0.Add(time.Second))
	})

	// With a short lease, a checkpoint that only advanced is published
	// within it.
	short := startMember(t, lease, "short-"+suffix)
	waitMembers(t, "both members", m, short)
	if err := short.Claim(ctx, "node-c", t0); err != nil {
		t.Fatal(err)
	}
	short.Checkpoint("node-c", t0.Add(time.Minute))
	waitFor(t, "the advanced checkpoint published within a lease", memberWait, func() bool {
		return publishedCheckpoints(t, memberLeaseName(lease, "short-"+suffix))["node-c"].Equal(t0.Add(time.Minute))
	})
}

// TestCountsGoOnceAReaderStopsRenewing: the leader's counts that changed go
// with a renewal only while a member is overdue; a reader that stops
// renewing (killed) makes them go within a few retry periods, long before
// its lease ends and the next reader of its keys counts from them.
func TestCountsGoOnceAReaderStopsRenewing(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "counts-" + suffix
	// A lease far longer than the test: only the overdue renewal can
	// publish the second count.
	long := func(replica string) Config {
		cfg := testConfig(lease, replica)
		cfg.LeaseDuration, cfg.RenewDeadline = 5*time.Minute, 2*time.Second
		return cfg
	}
	leader, reader := startMemberWith(t, long("leader-"+suffix)), startMemberWith(t, long("reader-"+suffix))
	waitMembers(t, "two members", leader, reader)
	for _, m := range []member{leader, reader} {
		m.SetLeader(leader.cfg.Identity)
	}
	shard := shardLeaseName(memberLeaseName(lease, "leader-"+suffix), 0)
	counted := func() time.Time {
		s, ok := getLease(t, shard)
		if !ok {
			return time.Time{}
		}
		return parseCheckpoints(s.Annotations[v1alpha1.CountedAnnotation])["node-1"]
	}
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	leader.Counted("node-1", t0)
	reader.Stop(context.Background(), false) // killed: its Lease stays, unrenewed
	waitFor(t, "the leader's count published while the reader's lease runs", memberWait, func() bool {
		return counted().Equal(t0)
	})
	if got := leader.Members(); len(got) != 2 {
		t.Fatalf("the reader left the members before its lease ended: %v", got)
	}
}
