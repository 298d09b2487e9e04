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
	if shards == 0 {
		t.Fatal("3,000 checkpoints in the membership Lease alone")
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
	waitFor(t, "the shards to be deleted", memberWait, func() bool { return len(shardLeases(t, name)) == 0 })
	waitFor(t, "the other member to read the one key left", memberWait, func() bool {
		_, gone := other.CheckpointOf(nodes[1])
		got, ok := other.CheckpointOf(nodes[0])
		return ok && got.Equal(t0) && !gone
	})
	t.Logf("3,000 checkpoints took %d shards beside the membership Lease", shards)
}
