package membership

import (
	"encoding/json"
	"maps"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// The leader's writer tells the readers how far it wrote each one's batches,
// through the leader's membership Lease, which every reader watches already
// and which is renewed every retry period anyway: a reader keeps a batch it
// sent until then, to send it again to a next leader.

// PublishWritten sets, on the leader, where each renewal reads how far
// writer (a component that writes statuses that count the readers' batches)
// wrote each sender's batches; nil marks remove writer's. The Lease carries
// the marks only while this replica leads (WrittenWriters.Marks).
func (m *Membership) PublishWritten(writer string, marks func() map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writtenMarks.Set(writer, marks)
}

// writtenMarksLocked is where this replica's marks are read while it leads,
// nil otherwise; m.mu is held. The caller reads them after it lets go of
// m.mu: the writers' stores go over every object they hold.
func (m *Membership) writtenMarksLocked() func() map[string]int64 {
	if m.leader != m.cfg.Identity {
		return nil
	}
	return m.writtenMarks.Marks()
}

// WrittenWriters are the writers' written-through marks, by writer. The
// zero value has none; its user guards it.
type WrittenWriters struct {
	marks map[string]func() map[string]int64
}

// Set sets where writer's marks are read; nil removes them.
func (w *WrittenWriters) Set(writer string, marks func() map[string]int64) {
	if marks == nil {
		delete(w.marks, writer)
		return
	}
	if w.marks == nil {
		w.marks = map[string]func() map[string]int64{}
	}
	w.marks[writer] = marks
}

// Marks reads the writers' marks as one (CombineWritten), at each call;
// nil while no writer set any. What it reads is the writers' as of now: it
// may be called without the guard of w.
func (w *WrittenWriters) Marks() func() map[string]int64 {
	if len(w.marks) == 0 {
		return nil
	}
	sources := slices.Collect(maps.Values(w.marks))
	return func() map[string]int64 {
		all := make([]map[string]int64, len(sources))
		for i, marks := range sources {
			all[i] = marks()
		}
		return CombineWritten(all...)
	}
}

// CombineWritten is the written-through marks of several writers as one:
// for each sender that every writer names, the lowest mark (a batch goes to
// every writer, and one that a writer has not heard of yet is not written
// there).
func CombineWritten(writers ...map[string]int64) map[string]int64 {
	if len(writers) == 0 {
		return nil
	}
	out := maps.Clone(writers[0])
	for _, marks := range writers[1:] {
		for sender, seq := range out {
			other, ok := marks[sender]
			switch {
			case !ok:
				delete(out, sender)
			case other < seq:
				out[sender] = other
			}
		}
	}
	return out
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
