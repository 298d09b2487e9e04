package membership

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// memberWait is a generous bound on what the test Leases promise within
// lease_duration + retry_period (2.2 s): a loaded machine may be slower.
const memberWait = 30 * time.Second

// env is the control plane the package's tests share.
var env *controlplanetest.Env

func TestMain(m *testing.M) {
	controlplanetest.Main(m, controlplanetest.Options{}, &env, nil)
}

// member is a started replica that has joined the membership, with a count
// of the calls of its OnMembersChanged function and its log.
type member struct {
	*Membership
	changes *atomic.Int32
	logs    *observer.ObservedLogs
}

// testConfig is the membership of replica on lease, with the durations of
// the tests' leader elector: short enough for tests.
func testConfig(lease, replica string) Config {
	return Config{Namespace: "default", LeaseName: lease, Replica: replica, Identity: replica + "_" + rand.String(5),
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}
}

// startMember starts the membership of replica on lease, attached to the
// test control plane as the enforcer extension attaches it, and stops it
// abruptly when the test ends.
func startMember(t *testing.T, lease, replica string) member {
	t.Helper()
	return startMemberWith(t, testConfig(lease, replica))
}

// startMemberWith is startMember with the configuration cfg.
func startMemberWith(t *testing.T, cfg Config) member {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	m := New(zap.New(core), cfg, nil)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		m.Stop(context.Background(), false)
		cancel()
	})
	m.Attach(ctx, cs, podUID)
	var n atomic.Int32
	m.OnMembersChanged(func() { n.Add(1) })
	return member{Membership: m, changes: &n, logs: logs}
}

// podUID finds a pod in the API server, as the enforcer finds it in its cache.
func podUID(namespace, name string) (types.UID, bool) {
	var p corev1.Pod
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, &p); err != nil {
		return "", false
	}
	return p.UID, true
}

// releaseTimeout bounds a graceful leave, as the enforcer bounds it.
const releaseTimeout = 5 * time.Second

// leave stops m gracefully, as the enforcer's shutdown does.
func (m member) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	m.Stop(ctx, true)
}

func joinMembers(t *testing.T, lease string, replicas ...string) []member {
	t.Helper()
	out := make([]member, len(replicas))
	for i, r := range replicas {
		out[i] = startMember(t, lease, r)
	}
	return out
}

// identities are the members' identities, sorted.
func identities(ms ...member) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.cfg.Identity)
	}
	slices.Sort(ids)
	return ids
}

// waitMembers waits until every one of ms sees exactly ms as the live members.
func waitMembers(t *testing.T, what string, ms ...member) {
	t.Helper()
	want := identities(ms...)
	waitFor(t, what, memberWait, func() bool {
		for _, m := range ms {
			if !slices.Equal(m.Members(), want) {
				return false
			}
		}
		return true
	})
}

// checkOwnedOnce fails unless each key is owned by exactly one of ms.
func checkOwnedOnce(t *testing.T, keys []string, ms ...member) map[string]int {
	t.Helper()
	count := map[string]int{}
	for _, k := range keys {
		owners := 0
		for _, m := range ms {
			if m.Owns(k) {
				owners++
				count[m.cfg.Identity]++
			}
		}
		if owners != 1 {
			t.Fatalf("key %s has %d owners", k, owners)
		}
	}
	return count
}

// setLeader tells every one of ms that leader holds the leader Lease, as the
// leader elector tells the enforcer extension that hosts them.
func setLeader(leader string, ms ...member) {
	for _, m := range ms {
		m.SetLeader(leader)
	}
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For

func getLease(t *testing.T, name string) (*coordinationv1.Lease, bool) {
	t.Helper()
	var l coordinationv1.Lease
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, &l)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &l, true
}

// createPod creates a bare pod in default, with address ip when set.
func createPod(t *testing.T, name, ip string) *corev1.Pod {
	t.Helper()
	return controlplanetest.CreatePod(t, env.Client, name, ip)
}

// TestMembersShareKeys: three replicas see each other; every key has one
// owner; the one that shuts down deletes its Lease and its keys go to the
// others, and one that stops renewing drops out when its Lease expires. Each
// change calls OnMembersChanged.
func TestMembersShareKeys(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "share-" + suffix
	// The first replica's pod exists: its Lease goes with the pod.
	pod := createPod(t, "collector-a-"+suffix, "")
	ms := joinMembers(t, lease, pod.Name, "collector-b-"+suffix, "collector-c-"+suffix)
	a, b, c := ms[0], ms[1], ms[2]
	waitMembers(t, "three members", a, b, c)
	// The leader reads no key while the others are live: they share them.
	leader := c.cfg.Identity
	setLeader(leader, a, b, c)
	keys := rendezvousKeys(300)
	count := checkOwnedOnce(t, keys, a, b, c)
	if len(count) != 2 || count[leader] != 0 {
		t.Fatalf("owners: %v; the leader %s owns keys, or a reader none", count, leader)
	}

	// Each replica's own Lease, written by it alone.
	l, ok := getLease(t, memberLeaseName(lease, pod.Name))
	if !ok {
		t.Fatal("no membership Lease of the first replica")
	}
	if l.Labels[v1alpha1.MemberOfLabel] != lease || *l.Spec.HolderIdentity != a.cfg.Identity ||
		*l.Spec.LeaseDurationSeconds != 2 || l.Spec.RenewTime == nil {
		t.Fatalf("membership Lease: labels %v, spec %+v", l.Labels, l.Spec)
	}
	waitFor(t, "the owner reference to the pod", memberWait, func() bool {
		l, _ := getLease(t, memberLeaseName(lease, pod.Name))
		return l != nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == pod.UID &&
			l.OwnerReferences[0].Kind == "Pod" && l.OwnerReferences[0].Controller != nil && !*l.OwnerReferences[0].Controller
	})
	if l, _ := getLease(t, memberLeaseName(lease, "collector-b-"+suffix)); l == nil || len(l.OwnerReferences) != 0 {
		t.Fatalf("a replica without a pod in the cache: %+v", l)
	}

	// A graceful shutdown deletes the Lease: the others take its keys.
	bOwned := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !b.Owns(k) })
	changesA, changesC := a.changes.Load(), c.changes.Load()
	start := time.Now()
	b.leave()
	if _, ok := getLease(t, memberLeaseName(lease, "collector-b-"+suffix)); ok {
		t.Fatal("the Lease of a replica that shut down is still there")
	}
	waitMembers(t, "two members after a shutdown", a, c)
	t.Logf("graceful leave seen after %s", time.Since(start).Round(time.Millisecond))
	checkOwnedOnce(t, keys, a, c)
	for _, k := range bOwned {
		if !a.Owns(k) && !c.Owns(k) {
			t.Fatalf("key %s of the replica that left has no owner", k)
		}
	}
	waitFor(t, "OnMembersChanged after the shutdown", memberWait, func() bool {
		return a.changes.Load() > changesA && c.changes.Load() > changesC
	})

	// An abrupt stop leaves the Lease, unrenewed: it expires.
	changesA = a.changes.Load()
	start = time.Now()
	c.Stop(context.Background(), false)
	if _, ok := getLease(t, memberLeaseName(lease, "collector-c-"+suffix)); !ok {
		t.Fatal("an abrupt stop deleted the Lease")
	}
	waitMembers(t, "one member after an expiry", a)
	t.Logf("expiry seen after %s", time.Since(start).Round(time.Millisecond))
	for _, k := range keys {
		if !a.Owns(k) {
			t.Fatalf("the last member does not own %s", k)
		}
	}
	waitFor(t, "OnMembersChanged after the expiry", memberWait, func() bool { return a.changes.Load() > changesA })
}

// TestCheckpointsAcrossMembers: a member's checkpoints reach the others
// through its Lease, and stay readable after its Lease expired or was
// deleted; the newest time of a key wins.
func TestCheckpointsAcrossMembers(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	ms := joinMembers(t, "checkpoints-"+suffix, "writer-"+suffix, "reader-"+suffix, "leaver-"+suffix)
	writer, reader, leaver := ms[0], ms[1], ms[2]
	waitMembers(t, "three members", writer, reader, leaver)

	t1 := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC)
	writer.Checkpoint("node-1", t1)
	writer.Checkpoint("node-1", t1.Add(-time.Minute)) // older: ignored
	if got, ok := writer.CheckpointOf("node-1"); !ok || !got.Equal(t1) {
		t.Fatalf("own checkpoint: %v %v", got, ok)
	}
	waitFor(t, "the reader to read the writer's checkpoint", memberWait, func() bool {
		got, ok := reader.CheckpointOf("node-1")
		return ok && got.Equal(t1)
	})
	if _, ok := reader.CheckpointOf("node-2"); ok {
		t.Fatal("a checkpoint of a key nobody checkpointed")
	}
	shard, _ := getLease(t, shardLeaseName(memberLeaseName("checkpoints-"+suffix, "writer-"+suffix), 0))
	if got := shard.Annotations[v1alpha1.CheckpointsAnnotation]; got != `{"node-1":"2026-12-03T10:00:00.123456789Z"}` {
		t.Fatalf("checkpoints annotation %q", got)
	}

	// The writer's Lease expires: its checkpoint stays readable.
	writer.Stop(context.Background(), false)
	waitMembers(t, "the writer's Lease to expire", reader, leaver)
	if got, ok := reader.CheckpointOf("node-1"); !ok || !got.Equal(t1) {
		t.Fatalf("after the writer's expiry: %v %v", got, ok)
	}

	// A member that leaves gracefully deletes its Lease: what it published
	// stays readable by those that watched it.
	t2 := t1.Add(time.Hour)
	leaver.Checkpoint("node-1", t2)
	leaver.Checkpoint("node-3", t2)
	waitFor(t, "the reader to read the leaver's checkpoints", memberWait, func() bool {
		got, ok := reader.CheckpointOf("node-3")
		return ok && got.Equal(t2)
	})
	leaver.leave()
	waitMembers(t, "the leaver to leave", reader)
	for _, k := range []string{"node-1", "node-3"} {
		if got, ok := reader.CheckpointOf(k); !ok || !got.Equal(t2) {
			t.Fatalf("%s after the leaver left: %v %v", k, got, ok)
		}
	}
}

// TestHandOverSettles: a key's checkpoint is not final while the member
// that published it is live and reads it; its release publishes the final
// checkpoint at once, and so does its graceful leave. A checkpoint published
// later, when a member reads the key again, is not final until its release.
func TestHandOverSettles(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	ms := joinMembers(t, "handover-"+suffix, "old-"+suffix, "new-"+suffix)
	previous, next := ms[0], ms[1]
	waitMembers(t, "two members", previous, next)
	// A key that nobody checkpointed is settled once the other member has
	// renewed since the join (TestJoinerWaitsForEarlierMembers).
	waitFor(t, "a key nobody checkpointed to be settled", memberWait, func() bool { return next.Settled("node-1") })

	t1 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	previous.Checkpoint("node-1", t1)
	waitFor(t, "the first checkpoint to be published", memberWait, func() bool {
		got, ok := next.CheckpointOf("node-1")
		return ok && got.Equal(t1)
	})
	if next.Settled("node-1") {
		t.Fatal("settled while its reader is live and has not released it")
	}
	if !previous.Settled("node-1") {
		t.Fatal("a member's own checkpoint is not settled for it")
	}

	// The next reader's Take waits for the release, and then counts from
	// the released checkpoint.
	t2 := t1.Add(time.Second)
	got := takeAtRelease(t, next, previous, "node-1", t2)
	if got.err != nil || !got.ok || !got.from.Equal(t2) {
		t.Fatalf("Take after the release: %v (%v), %v; want the released checkpoint %v", got.from, got.ok, got.err, t2)
	}
	if !next.Settled("node-1") {
		t.Fatal("not settled after the release")
	}

	// Read again: not final until released again, or until its reader leaves.
	t3 := t2.Add(time.Second)
	previous.Checkpoint("node-1", t3)
	waitFor(t, "the new checkpoint", memberWait, func() bool {
		got, _ := next.CheckpointOf("node-1")
		return got.Equal(t3)
	})
	if next.Settled("node-1") {
		t.Fatal("settled after the key was read again")
	}
	t4 := t3.Add(time.Second)
	previous.Checkpoint("node-1", t4)
	previous.leave()
	waitMembers(t, "the old member to leave", next)
	if got, ok := next.CheckpointOf("node-1"); !ok || !got.Equal(t4) || !next.Settled("node-1") {
		t.Fatalf("after a graceful leave: %v %v, settled %v; want %v, settled", got, ok, next.Settled("node-1"), t4)
	}
}

// TestLeaveAfterAWriteItDidNotSee: a renewal that the stop cut short may have
// reached the API server all the same, and the Lease that the member holds is
// then stale. Its graceful leave still publishes its last checkpoint and
// deletes its Lease.
func TestLeaveAfterAWriteItDidNotSee(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "stale-" + suffix
	ms := joinMembers(t, lease, "leaving-"+suffix, "staying-"+suffix)
	leaving, staying := ms[0], ms[1]
	waitMembers(t, "two members", leaving, staying)

	writeItDidNotSee(t, memberLeaseName(lease, "leaving-"+suffix))
	last := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	leaving.Checkpoint("node-9", last)
	leaving.leave()
	if _, ok := getLease(t, memberLeaseName(lease, "leaving-"+suffix)); ok {
		t.Fatal("the Lease is still there")
	}
	waitMembers(t, "the other member alone", staying)
	if got, ok := staying.CheckpointOf("node-9"); !ok || !got.Equal(last) || !staying.Settled("node-9") {
		t.Fatalf("after the leave: %v %v, settled %v; want %v, settled", got, ok, staying.Settled("node-9"), last)
	}
}

// writeItDidNotSee updates member Lease name behind its replica's back, as a
// renewal that timed out after the API server took it does: the replica's
// next renewal conflicts.
func writeItDidNotSee(t *testing.T, name string) {
	t.Helper()
	// The replica renews every 200ms: a renewal between the read and the
	// write conflicts with this one, which then reads the Lease again.
	l, ok := getLease(t, name)
	if !ok {
		t.Fatal("no Lease")
	}
	controlplanetest.Edit(t, env.Client, l, func(l *coordinationv1.Lease) { l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()} })
}

// TestLeaveRightAfterAConflictedRenewal: a renewal that conflicts with a
// write it did not see forgets the Lease until the next one reads it again; a
// replica that stops in between still deletes its Lease, so that the others
// take its keys at once rather than when it expires.
func TestLeaveRightAfterAConflictedRenewal(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "conflict-" + suffix
	ms := joinMembers(t, lease, "leaving-"+suffix, "staying-"+suffix)
	leaving, staying := ms[0], ms[1]
	waitMembers(t, "two members", leaving, staying)

	writeItDidNotSee(t, memberLeaseName(lease, "leaving-"+suffix))
	// The stop comes right after the conflict, well inside the retry period
	// (200ms) after which the next renewal would have read the Lease again.
	waitFor(t, "a renewal to conflict", memberWait, func() bool {
		return leaving.logs.FilterMessage("Cannot renew the membership Lease").Len() > 0
	})
	leaving.leave()
	if _, ok := getLease(t, memberLeaseName(lease, "leaving-"+suffix)); ok {
		t.Fatal("the Lease is still there")
	}
	waitMembers(t, "the other member alone", staying)
}

// TestReleaseOfAKeyNeverRead: a replica releases a key it never checkpointed
// (its source could not be dialled, then the key went to another member, as
// the Hubble receiver's nodes mode does) and goes on renewing its Lease: a
// release writes into a Lease without annotations as into one with them.
func TestReleaseOfAKeyNeverRead(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "never-read-" + suffix
	ms := joinMembers(t, lease, "reader-"+suffix, "other-"+suffix)
	waitMembers(t, "two members", ms...)
	ms[0].Release("node-unreadable")
	name := memberLeaseName(lease, "reader-"+suffix)
	first, ok := getLease(t, name)
	if !ok {
		t.Fatal("no Lease")
	}
	waitFor(t, "two more renewals of the releasing member's Lease", memberWait, func() bool {
		l, ok := getLease(t, name)
		return ok && l.Spec.RenewTime.Sub(first.Spec.RenewTime.Time) > 2*200*time.Millisecond // two retry periods of testConfig
	})
	waitMembers(t, "both members still", ms...)
	if !ms[1].Settled("node-unreadable") {
		t.Error("a key nobody read is not settled for the next owner")
	}
}

// TestForgottenKeyLeavesTheLease: a key whose source is gone leaves the
// member's published checkpoints at once; the others stay.
func TestForgottenKeyLeavesTheLease(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "forget-" + suffix
	ms := joinMembers(t, lease, "reader-"+suffix)
	waitMembers(t, "the member", ms...)
	t1 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ms[0].Checkpoint("node-kept", t1)
	ms[0].Checkpoint("node-gone", t1)
	name := memberLeaseName(lease, "reader-"+suffix)
	published := func() map[string]time.Time { return publishedCheckpoints(t, name) }
	waitFor(t, "both checkpoints published", memberWait, func() bool { return len(published()) == 2 })
	ms[0].Forget("node-gone")
	waitFor(t, "the forgotten key to leave the Lease", memberWait, func() bool {
		p := published()
		_, gone := p["node-gone"]
		return len(p) == 1 && !gone
	})
	if _, ok := ms[0].CheckpointOf("node-gone"); ok {
		t.Fatal("the forgotten key still has a checkpoint")
	}
}

// TestTakeReturnsOnceClaimWritten: taking a key that no reader had returns
// only when this replica's Lease, as the API server holds it, carries the
// claim at the start given, and says that nothing was counted before.
func TestTakeReturnsOnceClaimWritten(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	lease := "claim-" + suffix
	ms := joinMembers(t, lease, "reader-"+suffix)
	waitMembers(t, "the member", ms...)
	t1 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), memberWait)
	defer cancel()
	if from, ok, err := ms[0].Take(ctx, "node-c", t1); err != nil || ok {
		t.Fatalf("take: counted up to %v (%v), %v; want nothing counted before", from, ok, err)
	}
	if got, ok := publishedCheckpoints(t, memberLeaseName(lease, "reader-"+suffix))["node-c"]; !ok || got.Before(t1) {
		t.Fatalf("after the claim the Lease holds %v (%v), want %v", got, ok, t1)
	}
}

// TestJoinerWaitsForEarlierMembers: a replica that joins does not take a key
// that nobody published as settled until every earlier live member has
// renewed since: one of them may have claimed it just before it saw the
// joiner, its write still on its way. The earlier member here is a Lease that
// the test writes, so that its renewals come when the test says.
func TestJoinerWaitsForEarlierMembers(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	suffix := rand.String(5)
	lease := "joiner-" + suffix
	earlier := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: memberLeaseName(lease, "earlier-"+suffix), Namespace: "default",
			Labels: map[string]string{v1alpha1.MemberOfLabel: shortName(lease)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("earlier-" + suffix + "_1"), LeaseDurationSeconds: ptr.To(int32(60)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	if err := env.Client.Create(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), earlier) })
	joiner := joinMembers(t, lease, "joiner-"+suffix)[0]
	want := []string{"earlier-" + suffix + "_1", joiner.cfg.Identity}
	slices.Sort(want)
	waitFor(t, "the joiner to see both members", memberWait, func() bool { return slices.Equal(joiner.Members(), want) })
	if joiner.Settled("node-x") {
		t.Fatal("settled before the earlier member renewed after the join")
	}

	// The earlier member's next renewal carries its claim of node-x.
	renew := func(mutate func(*coordinationv1.Lease)) {
		t.Helper()
		var l coordinationv1.Lease
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: earlier.Name}, &l); err != nil {
			t.Fatal(err)
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		mutate(&l)
		if err := env.Client.Update(ctx, &l); err != nil {
			t.Fatal(err)
		}
	}
	claimed := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	renew(func(l *coordinationv1.Lease) {
		l.Annotations = map[string]string{v1alpha1.CheckpointsAnnotation: formatCheckpoints(map[string]time.Time{"node-x": claimed})}
	})
	waitFor(t, "the earlier member's claim", memberWait, func() bool {
		got, ok := joiner.CheckpointOf("node-x")
		return ok && got.Equal(claimed)
	})
	if joiner.Settled("node-x") {
		t.Fatal("settled while the earlier member holds its claim")
	}
	if !joiner.Settled("node-y") {
		t.Fatal("a key nobody claimed is not settled once every earlier member renewed after the join")
	}
	renew(func(l *coordinationv1.Lease) {
		l.Annotations[v1alpha1.ReleasedAnnotation] = `["node-x"]`
	})
	waitFor(t, "the release", memberWait, func() bool { return joiner.Settled("node-x") })
}

// TestAClaimAtAReleasedCheckpointIsNotSettled: a key that moves twice within
// one publication period (first to second at a release, then on to a third
// that joins) has the first member's release and the second's claim at one
// time. The claim wins: the third member waits for the second's release, and
// counts from there, rather than from the first's release while the second
// still reads the key.
func TestAClaimAtAReleasedCheckpointIsNotSettled(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	ms := joinMembers(t, "twice-"+suffix, "first-"+suffix, "second-"+suffix, "third-"+suffix)
	first, second, third := ms[0], ms[1], ms[2]
	waitMembers(t, "three members", ms...)

	released := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	first.Checkpoint("node-1", released)
	first.Release("node-1")
	ctx, cancel := context.WithTimeout(context.Background(), memberWait)
	defer cancel()
	from, ok, err := second.Take(ctx, "node-1", time.Time{})
	if err != nil || !ok || !from.Equal(released) {
		t.Fatalf("the second member's Take: %v (%v), %v; want the released checkpoint %v", from, ok, err, released)
	}
	// The claim is written when Take returns: the third member's cache
	// holds it once it holds that write of the second member's Lease.
	name := memberLeaseName("twice-"+suffix, "second-"+suffix)
	claim, found := getLease(t, name)
	if !found {
		t.Fatalf("no Lease %s after the second member's claim", name)
	}
	written, _ := strconv.ParseUint(claim.ResourceVersion, 10, 64)
	waitFor(t, "the third member to see the second's claim", memberWait, func() bool {
		obj, ok, _ := third.informer.GetStore().GetByKey("default/" + name)
		l, isLease := obj.(*coordinationv1.Lease)
		if !ok || !isLease {
			return false
		}
		seen, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
		return seen >= written
	})
	// Both times are in the third member's cache now, in an order that
	// changes from one look to the next.
	for range 50 {
		if third.Settled("node-1") {
			t.Fatal("settled by the first member's release while the second member's claim at that time holds the key")
		}
	}

	later := released.Add(time.Minute)
	if got := takeAtRelease(t, third, second, "node-1", later); got.err != nil || !got.from.Equal(later) {
		t.Fatalf("the third member counts from %v (%v), want the second member's release at %v", got.from, got.err, later)
	}
}

// taken is what a Take returned.
type taken struct {
	from time.Time
	ok   bool
	err  error
}

// takeAtRelease has taker Take key, checks that the Take waits while
// reader holds key, then has reader checkpoint key at t and release it, and
// returns what the Take returned.
func takeAtRelease(t *testing.T, taker, reader member, key string, at time.Time) taken {
	t.Helper()
	took := make(chan taken, 1)
	ctx, cancel := context.WithTimeout(context.Background(), memberWait)
	defer cancel()
	go func() {
		from, ok, err := taker.Take(ctx, key, time.Time{})
		took <- taken{from, ok, err}
	}()
	select {
	case got := <-took:
		t.Fatalf("Take returned %v before the key's reader released it", got)
	case <-time.After(5 * settlePoll):
	}
	reader.Checkpoint(key, at)
	reader.Release(key)
	return <-took
}
