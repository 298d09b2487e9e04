package enforcerextension

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
		m := newMembership(nil, LeaderElectionConfig{LeaseName: "network-enforcer"}, "pod-b", "pod-b_2")
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
		m := newMembership(nil, LeaderElectionConfig{LeaseName: "network-enforcer"}, "pod-b", "pod-b_2")
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
	m := newMembership(nil, LeaderElectionConfig{LeaseName: "network-enforcer", LeaseNamespace: "default"}, "pod-a", "pod-a_1")
	if m.Owns("node-1") {
		t.Fatal("owns a key before joining")
	}
	m.live = []string{"pod-b_2", "pod-c_3"}
	if m.Owns("node-1") {
		t.Fatal("owns a key while not live")
	}
	m.live = []string{"pod-a_1"}
	if !m.Owns("node-1") {
		t.Fatal("the only member does not own a key")
	}
}

// TestCheckpointsAreBounded: past maxCheckpoints the oldest checkpoint goes,
// so that a Lease's annotations stay within what the API server takes.
func TestCheckpointsAreBounded(t *testing.T) {
	m := newMembership(nil, LeaderElectionConfig{LeaseName: "network-enforcer"}, "pod-a", "pod-a_1")
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i := range maxCheckpoints + 10 {
		m.Checkpoint(fmt.Sprintf("node-%05d", i), t0.Add(time.Duration(i)*time.Second))
	}
	if n := len(m.checkpoints); n != maxCheckpoints {
		t.Fatalf("%d checkpoints, want %d", n, maxCheckpoints)
	}
	for i := range 10 {
		if _, ok := m.checkpoints[fmt.Sprintf("node-%05d", i)]; ok {
			t.Fatalf("node-%05d, among the oldest, was kept", i)
		}
	}
	if _, ok := m.checkpoints[fmt.Sprintf("node-%05d", maxCheckpoints+9)]; !ok {
		t.Fatal("the newest checkpoint was dropped")
	}
	if v := formatCheckpoints(m.checkpoints); len(v) > 128<<10 {
		t.Fatalf("the annotation is %d bytes at the bound", len(v))
	}
}
