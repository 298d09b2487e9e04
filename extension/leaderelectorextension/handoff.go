package leaderelectorextension

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// CheckpointLabelPrefix starts the Lease labels by which a leader that stops
// on a graceful shutdown tells the next one where each flow source that the
// leader reads stands: the label's name is the source's key (hubble-relay,
// goldmane), its value "<lease transitions>_<unix nanoseconds>": every flow
// of the source up to that time is written. A value is valid only for the
// term that follows the release that wrote it (the transitions count one
// more), so that a leader that crashed later, and wrote nothing, leaves
// nothing that the one after it could believe. These are the leader's part of
// the checkpoint store; the membership Leases hold the nodes'.
const CheckpointLabelPrefix = "checkpoint.networkenforcer.kubewarden.io/"

// handOffValue is a label's value for a term whose record has transitions.
func handOffValue(transitions int, until time.Time) string {
	return strconv.Itoa(transitions) + "_" + strconv.FormatInt(until.UnixNano(), 10)
}

// parseHandOff reads a label's value: the transitions of the term that wrote
// it and the time.
func parseHandOff(v string) (transitions int, until time.Time, ok bool) {
	a, b, found := strings.Cut(v, "_")
	if !found {
		return 0, time.Time{}, false
	}
	n, err1 := strconv.Atoi(a)
	ns, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || n < 0 || ns <= 0 {
		return 0, time.Time{}, false
	}
	return n, time.Unix(0, ns), true
}

// handOffLock is the Lease lock that writes the checkpoint labels with the
// release: client-go writes the lock's labels on each update, and the
// release is the last update of a term.
type handOffLock struct {
	*resourcelock.LeaseLock

	mu sync.Mutex
	// labels are what the release writes: each source's hand-off, and ""
	// for a label of an earlier term that this one does not hand on.
	labels map[string]string
	// transitions is the LeaderTransitions of the term held now.
	transitions int
}

// Update writes the lease record; a release (no holder) carries the hand-off.
func (l *handOffLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	if ler.HolderIdentity == "" {
		l.LeaseLock.Labels = maps.Clone(l.labels)
	} else {
		l.transitions = ler.LeaderTransitions
	}
	l.mu.Unlock()
	return l.LeaseLock.Update(ctx, ler)
}

// Create creates the Lease, for the first term.
func (l *handOffLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	l.transitions = ler.LeaderTransitions
	l.mu.Unlock()
	return l.LeaseLock.Create(ctx, ler)
}

// setHandOff sets what the release of the current term writes: until for
// each source handed on, "" for each other label seen (a value is valid for
// one term only, but a stale one need not stay).
func (l *handOffLock) setHandOff(until map[string]time.Time, seen []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.labels = map[string]string{}
	for _, k := range seen {
		l.labels[CheckpointLabelPrefix+k] = ""
	}
	for k, t := range until {
		l.labels[CheckpointLabelPrefix+k] = handOffValue(l.transitions, t)
	}
}

// readHandOff reads, at the start of a term, the checkpoints that the
// previous leader's release left: valid when written in the term just before
// this one. seen lists every source with a label, valid or not.
func readHandOff(ctx context.Context, cs kubernetes.Interface, lock *handOffLock) (from map[string]time.Time, seen []string) {
	l, err := cs.CoordinationV1().Leases(lock.LeaseMeta.Namespace).Get(ctx, lock.LeaseMeta.Name, metav1.GetOptions{})
	if err != nil || l.Spec.LeaseTransitions == nil {
		return nil, nil
	}
	for k, v := range l.Labels {
		source, ok := strings.CutPrefix(k, CheckpointLabelPrefix)
		if !ok {
			continue
		}
		seen = append(seen, source)
		n, until, ok := parseHandOff(v)
		if !ok || n+1 != int(*l.Spec.LeaseTransitions) {
			continue
		}
		if from == nil {
			from = map[string]time.Time{}
		}
		from[source] = until
	}
	return from, seen
}

// handOff is this replica's part of the checkpoint store for the sources
// that the leader reads: what each handed to the pipeline, whether a writer
// withheld the hand-off, and what the term was handed.
type handOff struct {
	mu sync.Mutex
	// until is, by source, the newest flow that the source handed to the
	// pipeline; released lists the sources whose reader stopped, so that
	// until is final.
	until    map[string]time.Time
	released map[string]bool
	// withheld is set by a writer that could not write everything.
	withheld bool
	// from is, by source, the previous leader's hand-off to this term; seen
	// lists the sources of every checkpoint label on the Lease.
	from map[string]time.Time
	seen []string
}

// begin starts a term that the previous leader handed from.
func (h *handOff) begin(from map[string]time.Time, seen []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.from, h.seen = from, seen
	h.until, h.released, h.withheld = map[string]time.Time{}, map[string]bool{}, false
}

// Take returns the time up to which the previous leader wrote every flow of
// source, when it handed the source on at a graceful shutdown; ok is false
// when it did not (a crash, a lost lease, a withheld hand-off), and the source
// reads its backfill. The leader reads the source from the start of its term,
// so there is nothing to wait for, nor a claim to write: start is unused.
func (l *elector) Take(_ context.Context, source string, _ time.Time) (time.Time, bool, error) {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.from[source]
	return t, ok, nil
}

// Checkpoint records that every flow of source up to t was handed to the
// pipeline; the newest is kept.
func (l *elector) Checkpoint(source string, t time.Time) {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.until == nil {
		h.until = map[string]time.Time{}
	}
	if t.After(h.until[source]) {
		h.until[source] = t
	}
}

// Release says that source's reader stopped: its checkpoint is final, and the
// release of the Lease hands it on.
func (l *elector) Release(source string) {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released == nil {
		h.released = map[string]bool{}
	}
	h.released[source] = true
}

// Withhold keeps this term's release from handing any source over.
func (l *elector) Withhold() {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	h.withheld = true
}

// writeHandOff runs on a graceful shutdown while this replica leads, after every
// other component's Shutdown: the flow sources have released what they read,
// and each writer has written what it held, or withheld the hand-off. Unless
// one did, the release of the Lease tells the next leader to resume each
// released source after its checkpoint; otherwise the next leader reads the
// backfill, and may count again what this one wrote.
func (l *elector) writeHandOff() {
	h := &l.handOff
	h.mu.Lock()
	until := map[string]time.Time{}
	for k, t := range h.until {
		if h.released[k] && !t.IsZero() {
			until[k] = t
		}
	}
	withheld, seen := h.withheld, h.seen
	h.mu.Unlock()
	if withheld {
		l.set.Logger.Warn("A writer did not write everything before the lease is given up: the next leader reads the flow sources' backfill")
		until = nil
	}
	l.lock.setHandOff(until, seen)
	for k, t := range until {
		l.set.Logger.Info("Handing the flow source over with the lease", zap.String("source", k), zap.Time("written_until", t))
	}
}
