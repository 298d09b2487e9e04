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

// writtenMarksLocked is where this replica's marks are read while it leads,
// nil otherwise; m.mu is held. The caller reads them after it lets go of
// m.mu: the writer's store goes over every object it holds.
func (m *Membership) writtenMarksLocked() func() map[string]int64 {
	if m.leader != m.cfg.Identity {
		return nil
	}
	return m.writtenMarks
}

// WrittenThrough returns the leader's identity and the last batch of sender
// up to which it wrote every record, as its Lease last said; false when no
// leader is known or it said nothing of sender.
func (m *Membership) WrittenThrough(sender string) (leader string, seq int64, ok bool) {
	m.mu.Lock()
	leader, own, informer := m.leader, m.writtenMarksLocked(), m.informer
	m.mu.Unlock()
	switch {
	case leader == "":
		return "", 0, false
	case leader == m.cfg.Identity:
		if own == nil {
			return leader, 0, false
		}
		seq, ok = own()[sender]
		return leader, seq, ok
	case informer == nil:
		return leader, 0, false
	}
	for _, obj := range informer.GetStore().List() {
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
