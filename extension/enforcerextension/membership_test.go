package enforcerextension

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// The membership protocol is internal/membership's, tested there; these
// tests hold what the enforcer adds: the leader elector's Lease settings,
// identity and holder, the cached pods, and the Lease's deletion at shutdown.

// memberWait is a generous bound on what the test Leases promise within
// lease_duration + retry_period (2.2 s): a loaded machine may be slower.
const memberWait = 30 * time.Second

// createPod creates a bare pod in default, with address ip when set.
func createPod(t *testing.T, name, ip string) *corev1.Pod {
	t.Helper()
	return controlplanetest.CreatePod(t, env.Client, name, ip)
}

// memberLeases lists the member Leases of the leader Lease lease.
func memberLeases(t *testing.T, lease string) []coordinationv1.Lease {
	t.Helper()
	var list coordinationv1.LeaseList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default"),
		client.MatchingLabels{v1alpha1.MemberOfLabel: lease}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestEnforcerHostsTheMembership: the enforcer joins the membership under the
// leader elector's identity, on a Lease named after the elector's and owned
// by its cached pod; the leader that the elector reports reads no key while
// another member is live; a shutdown deletes the replica's Lease, and says so.
func TestEnforcerHostsTheMembership(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "hosted-" + suffix
	pod := createPod(t, "collector-a-"+suffix, "")
	a := startReplicaOn(t, env, lease, pod.Name)
	b, logs := startLoggedReplicaOn(t, env, lease, "collector-b-"+suffix)
	for _, e := range []*enforcer{a, b} {
		e.OnMembersChanged(func() {})
	}
	want := []string{a.elector.Identity(), b.elector.Identity()}
	slices.Sort(want)
	waitFor(t, "two members", memberWait, func() bool {
		return slices.Equal(a.membership.Members(), want) && slices.Equal(b.membership.Members(), want)
	})
	waitFor(t, "a leader", memberWait, func() bool { return a.isLeader() || b.isLeader() })
	leader, reader := a, b
	if b.isLeader() {
		leader, reader = b, a
	}
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = fmt.Sprintf("node-%d", i)
	}
	waitFor(t, "the reader to own every key and the leader none", memberWait, func() bool {
		for _, k := range keys {
			if leader.Owns(k) || !reader.Owns(k) {
				return false
			}
		}
		return true
	})
	waitFor(t, "the owner reference to the cached pod", memberWait, func() bool {
		for _, l := range memberLeases(t, lease) {
			if *l.Spec.HolderIdentity == a.elector.Identity() {
				return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == pod.UID
			}
		}
		return false
	})
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	for _, l := range memberLeases(t, lease) {
		if *l.Spec.HolderIdentity == b.elector.Identity() {
			t.Fatal("the Lease of a replica that shut down is still there")
		}
	}
	if logs.FilterMessage("Left the members: deleted the membership Lease").Len() != 1 {
		t.Error("the shutdown did not say that it left the members")
	}
}

// TestLeaderAddress: every replica finds the leader's pod IP from the holder
// of the leader Lease and the cached pods; none while the leader's pod is
// unknown or has no IP.
func TestLeaderAddress(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "locate-" + suffix
	leaderPod := "leader-" + suffix
	createPod(t, leaderPod, "10.244.7.9")
	leader := startReplicaOn(t, env, lease, leaderPod)
	waitFor(t, "leadership", memberWait, leader.isLeader)
	standby := startReplicaOn(t, env, lease, "standby-"+suffix)
	for name, e := range map[string]*enforcer{"leader": leader, "standby": standby} {
		waitFor(t, fmt.Sprintf("the %s to locate the leader", name), memberWait, func() bool {
			addr, identity, ok := e.LeaderAddress()
			return ok && addr == "10.244.7.9" && leaderelectorextension.PodOfIdentity(identity) == leaderPod
		})
	}

	// A leader whose pod has no IP yet, then none in the cache: unknown.
	other := "other-" + suffix
	createPod(t, other, "")
	third := startReplicaOn(t, env, "locate-other-"+suffix, other)
	waitFor(t, "the third replica to lead its own lease", memberWait, third.isLeader)
	if addr, _, ok := third.LeaderAddress(); ok {
		t.Fatalf("a leader without a pod IP located at %s", addr)
	}
	lone := startReplicaOn(t, env, "locate-lone-"+suffix, "lone-"+suffix)
	waitFor(t, "the lone replica to lead", memberWait, lone.isLeader)
	if addr, _, ok := lone.LeaderAddress(); ok {
		t.Fatalf("a leader without a pod located at %s", addr)
	}

	// The leader shuts down: the standby leads, and its own pod is unknown.
	if err := leader.stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the standby to lead", memberWait, standby.isLeader)
	if addr, _, ok := standby.LeaderAddress(); ok {
		t.Fatalf("a new leader without a pod located at %s", addr)
	}
}
