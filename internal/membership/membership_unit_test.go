package membership

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// TestLiveMember: a member Lease is live until its duration has passed since
// this replica saw its renewal change, by this replica's clock; one without a
// holder, a renew time or a duration, or being deleted, is not.
func TestLiveMember(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	lease := func(renewed time.Time, mutate func(*coordinationv1.Lease)) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "member"}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("pod-a_1"), LeaseDurationSeconds: ptr.To(int32(15)),
			RenewTime: &metav1.MicroTime{Time: renewed},
		}}
		if mutate != nil {
			mutate(l)
		}
		return l
	}
	for name, c := range map[string]struct {
		lease *coordinationv1.Lease
		live  bool
	}{
		"renewed just now":      {lease(now, nil), true},
		"no holder":             {lease(now, func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("") }), false},
		"no renew time":         {lease(now, func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }), false},
		"no duration":           {lease(now, func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = nil }), false},
		"being deleted":         {lease(now, func(l *coordinationv1.Lease) { l.DeletionTimestamp = &metav1.Time{Time: now} }), false},
		"renewed in the future": {lease(now.Add(time.Hour), nil), true},
		// First seen now: its remote time says nothing of this clock.
		"renew time an hour behind": {lease(now.Add(-time.Hour), nil), true},
	} {
		m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-b", Identity: "pod-b_2"}, nil)
		id, live := m.liveLocked(c.lease, now)
		if live != c.live {
			t.Errorf("%s: live %v, want %v", name, live, c.live)
		}
		if live && id != "pod-a_1" {
			t.Errorf("%s: identity %q", name, id)
		}
	}
}

// TestLivenessIgnoresClockSkew: a member whose clock is an hour behind or
// ahead of this replica's is live while its renewals keep changing its Lease
// and expires its duration after the last change this replica saw, whatever
// the renew time says.
func TestLivenessIgnoresClockSkew(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-b", Identity: "pod-b_2"}, nil)
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "member"}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("pod-a_1"), LeaseDurationSeconds: ptr.To(int32(15)),
		}}
		// It renews every 2 s for a minute, by its own clock.
		for i := 0; i <= 30; i++ {
			at := now.Add(time.Duration(i) * 2 * time.Second)
			l.Spec.RenewTime = &metav1.MicroTime{Time: at.Add(skew)}
			if _, live := m.liveLocked(l, at); !live {
				t.Fatalf("skew %v: a member that renews expired at %v", skew, at)
			}
		}
		// Then it stops: live until 15 s after its last renewal was seen.
		last := now.Add(time.Minute)
		if _, live := m.liveLocked(l, last.Add(14900*time.Millisecond)); !live {
			t.Errorf("skew %v: expired before its duration", skew)
		}
		if _, live := m.liveLocked(l, last.Add(15*time.Second)); live {
			t.Errorf("skew %v: a member that stopped renewing is live past its duration", skew)
		}
		// A new holder is a new sighting.
		l.Spec.HolderIdentity = ptr.To("pod-a_2")
		if _, live := m.liveLocked(l, last.Add(time.Minute)); !live {
			t.Errorf("skew %v: a new holder is not live", skew)
		}
	}
}

// TestCheckpointsAnnotation: the annotation is JSON from key to RFC 3339
// with nanoseconds, the same for the same checkpoints; what cannot be read
// is left out.
func TestCheckpointsAnnotation(t *testing.T) {
	t1 := time.Date(2026, 12, 3, 10, 0, 0, 5, time.FixedZone("CET", 3600))
	c := map[string]time.Time{"node-b": t1, "node-a": t1.Add(time.Second)}
	v := formatCheckpoints(c)
	if want := `{"node-a":"2026-12-03T09:00:01.000000005Z","node-b":"2026-12-03T09:00:00.000000005Z"}`; v != want {
		t.Fatalf("annotation %s, want %s", v, want)
	}
	back := parseCheckpoints(v)
	if len(back) != 2 || !back["node-a"].Equal(c["node-a"]) || !back["node-b"].Equal(t1) {
		t.Fatalf("read back %v", back)
	}
	if formatCheckpoints(nil) != "" {
		t.Fatal("an annotation without checkpoints")
	}
	if got := parseCheckpoints(`{"node-a":"yesterday","node-b":"2026-12-03T09:00:00Z"}`); len(got) != 1 {
		t.Fatalf("an unreadable time was kept: %v", got)
	}
	if got := parseCheckpoints(`not json`); len(got) != 0 {
		t.Fatalf("unreadable JSON gave %v", got)
	}
}

// TestOwnsNothingBeforeJoining: a replica that has not written its Lease,
// or whose Lease is no longer among the live, owns no key.
func TestOwnsNothingBeforeJoining(t *testing.T) {
	m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-a", Identity: "pod-a_1"}, nil)
	if m.Owns("node-1") {
		t.Fatal("owns a key before joining")
	}
	setLive(m, "pod-b_2", "pod-c_3")
	if m.Owns("node-1") {
		t.Fatal("owns a key while not live")
	}
	setLive(m, "pod-a_1")
	if !m.Owns("node-1") {
		t.Fatal("the only member does not own a key")
	}
}

// TestTheLeaderReadsNoKey: while another member is live the leader owns no
// key, and the others share them all; alone, it owns them all. A new leader
// shares the keys anew.
func TestTheLeaderReadsNoKey(t *testing.T) {
	m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-a", Identity: "pod-a_1"}, nil)
	calls := make(chan struct{}, 10)
	m.fns = append(m.fns, func() { calls <- struct{}{} })
	setLive(m, "pod-a_1", "pod-b_2")
	<-calls
	keys := rendezvousKeys(50)
	owned := func() (n int) {
		for _, k := range keys {
			if m.Owns(k) {
				n++
			}
		}
		return n
	}
	if n := owned(); n == 0 || n == len(keys) {
		t.Fatalf("with no leader known, a member of two owns %d of %d keys", n, len(keys))
	}
	m.SetLeader("pod-a_1")
	<-calls
	if n := owned(); n != 0 {
		t.Fatalf("the leader owns %d keys while another member is live", n)
	}
	m.SetLeader("pod-b_2")
	<-calls
	if n := owned(); n != len(keys) {
		t.Fatalf("the only reader owns %d of %d keys", n, len(keys))
	}
	m.SetLeader("pod-b_2") // seen again: no change, no call
	m.SetLeader("pod-a_1")
	<-calls
	setLive(m, "pod-a_1") // the other left: the leader reads alone
	<-calls
	if n := owned(); n != len(keys) {
		t.Fatalf("the leader alone owns %d of %d keys", n, len(keys))
	}
	if len(calls) != 0 {
		t.Fatalf("%d calls of OnMembersChanged for no change", len(calls))
	}
}

// setLive makes ids the live members, as evaluate does.
func setLive(m *Membership, ids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live = slices.Sorted(slices.Values(ids))
	m.shareLocked(true)
}

// TestSixThousandNodesSurvivePublish: the checkpoints, released keys and
// counts of 6,000 nodes (one reader's and the leader's at a cluster past
// 5,000 nodes) are split into shards that each stay well inside what the API
// server takes of an object's annotations, and read back whole: none is
// dropped, whatever the number of nodes.
func TestSixThousandNodesSurvivePublish(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 123456789, time.UTC)
	checkpoints, released, counted := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	for i := range 6000 {
		k := fmt.Sprintf("ip-10-%d-%d-%d.eu-west-1.compute.internal", i/65536, i/256%256, i%256)
		checkpoints[k] = t0.Add(time.Duration(i) * time.Millisecond)
		counted[k] = t0.Add(time.Duration(i) * time.Second)
		if i%10 == 0 {
			released[k] = checkpoints[k]
		}
	}
	shards := splitShards(checkpoints, released, counted)
	if len(shards) < 2 {
		t.Fatalf("6,000 nodes in %d shard", len(shards))
	}
	gotC, gotR, gotN := map[string]time.Time{}, map[string]bool{}, map[string]time.Time{}
	total := 0
	for i, s := range shards {
		if s.size() > shardMaxBytes {
			t.Errorf("shard %d takes %d bytes, more than %d", i, s.size(), shardMaxBytes)
		}
		total += s.size()
		maps.Copy(gotC, parseCheckpoints(s.checkpoints))
		maps.Copy(gotR, parseReleased(s.released))
		maps.Copy(gotN, parseCheckpoints(s.counted))
	}
	t.Logf("6,000 nodes: %d shards, %d bytes in all", len(shards), total)
	if len(gotC) != len(checkpoints) || len(gotR) != len(released) || len(gotN) != len(counted) {
		t.Fatalf("read back %d checkpoints, %d released, %d counts; want %d, %d, %d",
			len(gotC), len(gotR), len(gotN), len(checkpoints), len(released), len(counted))
	}
	for k, want := range checkpoints {
		if !gotC[k].Equal(want) || !gotN[k].Equal(counted[k]) {
			t.Fatalf("%s: checkpoint %v, count %v; want %v, %v", k, gotC[k], gotN[k], want, counted[k])
		}
	}
	// A replica with few keys keeps them in one shard.
	if n := len(splitShards(map[string]time.Time{"node-1": t0}, nil, nil)); n != 1 {
		t.Fatalf("one checkpoint in %d shards", n)
	}
	// A membership Lease keeps every checkpoint and count it is given.
	m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-a", Identity: "pod-a_1"}, nil)
	for k, c := range checkpoints {
		m.Checkpoint(k, c)
		m.Counted(k, counted[k])
	}
	if len(m.checkpoints) != len(checkpoints) || len(m.counted) != len(counted) {
		t.Fatalf("kept %d checkpoints and %d counts of %d", len(m.checkpoints), len(m.counted), len(checkpoints))
	}
	m.Forget("ip-10-0-0-5.eu-west-1.compute.internal")
	if _, ok := m.CountFrom("ip-10-0-0-5.eu-west-1.compute.internal"); ok {
		t.Fatal("a forgotten key still counts from somewhere")
	}
}

// TestCountFrom: a new owner counts from the previous reader's checkpoint when
// that reader hands everything up to it on (it released the key before it
// left); from how far the leader took the key's records when the reader was
// killed (its checkpoint was published up to a retry period late, or early of
// what it had sent); from the checkpoint when no leader published a count.
func TestCountFrom(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 4, 10, 0, s, 0, time.UTC) }
	lease := func(name string, annotations map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	}
	reader := func(checkpoint time.Time, released bool) *coordinationv1.Lease {
		a := map[string]string{v1alpha1.CheckpointsAnnotation: formatCheckpoints(map[string]time.Time{"node-1": checkpoint})}
		if released {
			a[v1alpha1.ReleasedAnnotation] = formatReleased(map[string]time.Time{"node-1": checkpoint})
		}
		return lease("reader", a)
	}
	leader := func(counted time.Time) *coordinationv1.Lease {
		return lease("leader", map[string]string{v1alpha1.CountedAnnotation: formatCheckpoints(map[string]time.Time{"node-1": counted})})
	}
	for name, c := range map[string]struct {
		gone    []*coordinationv1.Lease
		counted time.Time // this replica's own count, as the leader
		want    time.Time
		ok      bool
	}{
		"nobody read it":                      {},
		"released, the leader behind":         {gone: []*coordinationv1.Lease{reader(at(5), true), leader(at(3))}, want: at(5), ok: true},
		"killed, the leader ahead":            {gone: []*coordinationv1.Lease{reader(at(5), false), leader(at(7))}, want: at(7), ok: true},
		"killed, the leader behind":           {gone: []*coordinationv1.Lease{reader(at(5), false), leader(at(3))}, want: at(3), ok: true},
		"killed, this replica leads":          {gone: []*coordinationv1.Lease{reader(at(5), false)}, counted: at(7), want: at(7), ok: true},
		"killed, no leader published a count": {gone: []*coordinationv1.Lease{reader(at(5), false)}, want: at(5), ok: true},
	} {
		m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-b", Identity: "pod-b_2"}, nil)
		for _, l := range c.gone {
			m.deleted(l)
		}
		if !c.counted.IsZero() {
			m.Counted("node-1", c.counted)
		}
		got, ok := m.CountFrom("node-1")
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: counts from %v (%v), want %v (%v)", name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzMemberAnnotations: what another replica's Lease says is read without a
// panic, whatever it holds; what reads back writes again as the same
// checkpoints.
func FuzzMemberAnnotations(f *testing.F) {
	f.Add(`{"node-1":"2026-12-04T10:00:00.123456789Z"}`)
	f.Add(`{"node-1":"not a time","node-2":"2026-12-04T10:00:00Z"}`)
	f.Add(`["node-1","node-2"]`)
	f.Add(`{"node-1":7}`)
	f.Add(`{`)
	f.Add(``)
	f.Add(`{"reader-process":12,"other":-3}`)
	f.Fuzz(func(t *testing.T, v string) {
		times := parseCheckpoints(v)
		_ = parseReleased(v)
		marks := parseWritten(v)
		for sender, seq := range marks {
			if seq < 1 {
				t.Fatalf("%s: a mark %d that names no batch", sender, seq)
			}
		}
		if again := parseWritten(formatWritten(marks)); len(again) != len(marks) {
			t.Fatalf("%d marks read back as %d", len(marks), len(again))
		}
		again := parseCheckpoints(formatCheckpoints(times))
		if len(again) != len(times) {
			t.Fatalf("%d checkpoints read back as %d", len(times), len(again))
		}
		for k, tm := range times {
			if !again[k].Equal(tm) {
				t.Fatalf("%s: %v read back as %v", k, tm, again[k])
			}
		}
	})
}

// TestCountsGoWhenAMemberIsOverdue: the leader's counts that changed go with
// the next renewal only while another live member's renewal is overdue (two
// retry periods since it was seen), which a killed reader's becomes long
// before its lease ends; or always, with a lease shorter than six retry
// periods.
func TestCountsGoWhenAMemberIsOverdue(t *testing.T) {
	seen := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	reader := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "network-enforcer-member-pod-b"}, Spec: coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("pod-b_1"), LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: &metav1.MicroTime{Time: seen},
	}}
	shard := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "network-enforcer-member-pod-b-shard-0",
		Labels: map[string]string{v1alpha1.ShardOfLabel: reader.Name, v1alpha1.ShardLabel: "0"}}}
	leader := func(lease time.Duration) *Membership {
		m := New(nil, Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-a", Identity: "pod-a_1",
			LeaseDuration: lease, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, nil)
		m.informer = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &coordinationv1.Lease{}, 0, toolscache.Indexers{})
		for _, l := range []*coordinationv1.Lease{reader, shard} {
			if err := m.informer.GetStore().Add(l); err != nil {
				t.Fatal(err)
			}
		}
		m.liveLocked(reader, seen) // first seen now
		return m
	}
	m := leader(15 * time.Second)
	for _, c := range []struct {
		after time.Duration
		due   bool
	}{
		{time.Second, false},     // renews on time
		{4 * time.Second, false}, // two retry periods: not yet overdue
		{5 * time.Second, true},  // overdue, still live
		{14 * time.Second, true},
		{16 * time.Second, false}, // expired: gone from the members, which publishes at once (evaluate)
	} {
		if got := m.countsDueLocked(seen.Add(c.after)); got != c.due {
			t.Errorf("%s after the reader's renewal: due %v, want %v", c.after, got, c.due)
		}
	}
	if !leader(10 * time.Second).countsDueLocked(seen.Add(time.Second)) {
		t.Error("a lease of five retry periods: the counts must go at every renewal")
	}
}

// TestCountsWithoutMembershipWarnOnce: a replica that takes the readers'
// records but reads no keys itself (no OnMembersChanged) cannot publish its
// counts; it says so once, but not within a lease duration of its start,
// while its receivers start.
func TestCountsWithoutMembershipWarnOnce(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	starting := New(zap.New(core), Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-c", Identity: "pod-c_1",
		LeaseDuration: time.Hour}, nil)
	starting.Counted("node-1", time.Now())
	if n := logs.Len(); n != 0 {
		t.Fatalf("warned while starting: %v", logs.All())
	}
	m := New(zap.New(core), Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-a", Identity: "pod-a_1"}, nil)
	m.Counted("node-1", time.Now())
	m.Counted("node-2", time.Now())
	if n := logs.FilterMessageSnippet("cannot publish how far it took them").Len(); n != 1 {
		t.Fatalf("%d warnings, want 1: %v", n, logs.All())
	}
	member := New(zap.New(core), Config{Namespace: "default", LeaseName: "network-enforcer", Replica: "pod-b", Identity: "pod-b_1"}, nil)
	member.OnMembersChanged(func() {})
	member.Counted("node-1", time.Now())
	if n := logs.FilterMessageSnippet("cannot publish how far it took them").Len(); n != 1 {
		t.Fatalf("a member warned too: %d warnings", n)
	}
}
