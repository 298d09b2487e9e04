package membership

import (
	"encoding/json"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// The leader's writer tells the readers how far it wrote each one's batches,
// through the leader's membership Lease, which every reader watches already
// and which is renewed every retry period anyway: a reader keeps a batch it
// sent until then, to send it again to a next leader.

// PublishWritten sets, on the leader, where each renewal reads how far the
// writer wrote each sender's batches (nil: nowhere). The Lease carries the
// marks only while this replica leads.
func (m *Membership) PublishWritten(marks func() map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writtenMarks = marks
}

// writtenAnnotationLocked is what this replica's Lease says of the marks now:
// the writer's, while this replica leads; m.mu is held, and the writer's
// store has a lock of its own that never waits for m.mu.
func (m *Membership) writtenAnnotationLocked() string {
	if m.writtenMarks == nil || m.leader != m.cfg.Identity {
		return ""
	}
	return formatWritten(m.writtenMarks())
}

// WrittenThrough returns the leader's identity and the last batch of sender
// up to which it wrote every record, as its Lease last said; false when no
// leader is known or it said nothing of sender.
func (m *Membership) WrittenThrough(sender string) (leader string, seq int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	leader = m.leader
	if leader == "" {
		return "", 0, false
	}
	if leader == m.cfg.Identity {
		if m.writtenMarks == nil {
			return leader, 0, false
		}
		seq, ok = m.writtenMarks()[sender]
		return leader, seq, ok
	}
	if m.informer == nil {
		return leader, 0, false
	}
	for _, obj := range m.informer.GetStore().List() {
		l, isLease := obj.(*coordinationv1.Lease)
		if !isLease || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != leader {
			continue
		}
		if _, _, isShard := shardIndex(l); isShard {
			continue
		}
		seq, ok = parseWritten(l.Annotations[v1alpha1.WrittenThroughAnnotation])[sender]
		return leader, seq, ok
	}
	return leader, 0, false
}

// formatWritten is the annotation of marks; "" for none.
func formatWritten(marks map[string]int64) string {
	if len(marks) == 0 {
		return ""
	}
	b, _ := json.Marshal(marks)
	return string(b)
}

// parseWritten reads the annotation; what cannot be read is nothing, and a
// mark below 1 names no batch.
func parseWritten(v string) map[string]int64 {
	if v == "" {
		return nil
	}
	var marks map[string]int64
	if err := json.Unmarshal([]byte(v), &marks); err != nil {
		return nil
	}
	for sender, seq := range marks {
		if seq < 1 {
			delete(marks, sender)
		}
	}
	return marks
}
