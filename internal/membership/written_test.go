package membership

import (
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestTheLeaderPublishesHowFarItWrote: the leader's membership Lease carries
// its writer's written-through marks at its renewals, and a reader reads its
// own sender's mark from it, with the leader's identity; a member that does
// not lead publishes none, and the marks go from the Lease once the leader
// hands the lead on.
func TestTheLeaderPublishesHowFarItWrote(t *testing.T) {
	controlplanetest.Require(t)
	suffix := rand.String(5)
	ms := joinMembers(t, "written-"+suffix, "leader-"+suffix, "reader-"+suffix)
	leader, reader := ms[0], ms[1]
	waitMembers(t, "two members", leader, reader)
	var mark atomic.Int64
	mark.Store(7)
	marks := func() map[string]int64 { return map[string]int64{"reader-process": mark.Load()} }
	leader.PublishWritten("writer", marks)
	reader.PublishWritten("writer", marks) // a writer that does not lead publishes nothing

	if _, _, ok := reader.WrittenThrough("reader-process"); ok {
		t.Fatal("a mark while no leader is known")
	}
	setLeader(leader.cfg.Identity, leader, reader)
	waitFor(t, "the reader to read the leader's mark", memberWait, func() bool {
		who, seq, ok := reader.WrittenThrough("reader-process")
		return ok && seq == 7 && who == leader.cfg.Identity
	})
	if who, seq, ok := leader.WrittenThrough("reader-process"); !ok || seq != 7 || who != leader.cfg.Identity {
		t.Fatalf("the leader's own mark: %s %d %v", who, seq, ok)
	}
	if _, _, ok := reader.WrittenThrough("another-process"); ok {
		t.Fatal("a mark of a sender that the leader did not name")
	}
	mark.Store(9)
	waitFor(t, "the next mark", memberWait, func() bool {
		_, seq, _ := reader.WrittenThrough("reader-process")
		return seq == 9
	})
	l, _ := getLease(t, memberLeaseName("written-"+suffix, "leader-"+suffix))
	if got := l.Annotations[v1alpha1.WrittenThroughAnnotation]; got != `{"reader-process":9}` {
		t.Fatalf("the leader's Lease says %q", got)
	}
	if l, _ := getLease(t, memberLeaseName("written-"+suffix, "reader-"+suffix)); l.Annotations[v1alpha1.WrittenThroughAnnotation] != "" {
		t.Fatalf("a reader's Lease says %q", l.Annotations[v1alpha1.WrittenThroughAnnotation])
	}

	// The reader leads now: the old leader's Lease drops its marks, and the
	// reader answers from its own writer.
	setLeader(reader.cfg.Identity, leader, reader)
	waitFor(t, "the old leader's Lease to drop its marks", memberWait, func() bool {
		l, _ := getLease(t, memberLeaseName("written-"+suffix, "leader-"+suffix))
		return l.Annotations[v1alpha1.WrittenThroughAnnotation] == ""
	})
	if who, seq, ok := leader.WrittenThrough("reader-process"); who != reader.cfg.Identity || (ok && seq != 9) {
		t.Fatalf("after the hand-off: %s %d %v", who, seq, ok)
	}
}

// TestTheWritersMarksCombine: with several writers, a sender's mark is the
// lowest that they say, and a sender that one of them does not name yet has
// none.
func TestTheWritersMarksCombine(t *testing.T) {
	got := CombineWritten(
		map[string]int64{"a": 7, "b": 3, "c": 5},
		map[string]int64{"a": 4, "b": 9},
	)
	if len(got) != 2 || got["a"] != 4 || got["b"] != 3 {
		t.Fatalf("combined %v, want a at 4 and b at 3, c with none", got)
	}
	if got := CombineWritten(map[string]int64{"a": 7}); len(got) != 1 || got["a"] != 7 {
		t.Fatalf("one writer's marks combined %v, want them as they are", got)
	}
	if got := CombineWritten(map[string]int64{"a": 7}, nil); len(got) != 0 {
		t.Fatalf("with a writer that names no sender, %v, want none", got)
	}
}
