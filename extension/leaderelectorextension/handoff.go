package leaderelectorextension

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// HandOffLabel is the Lease label by which a leader that stops on a graceful
// shutdown tells the next one where the flow stream stands: every flow up to
// that time is written. Its value is "<lease transitions>_<unix nanoseconds>";
// it is valid only for the term that follows the release that wrote it (the
// transitions count one more), so that a leader that crashed later, and wrote
// nothing, leaves nothing that the one after it could believe.
const HandOffLabel = "networkenforcer.kubewarden.io/flows-written-until"

// handOffValue is the label's value for a term whose record has transitions.
func handOffValue(transitions int, until time.Time) string {
	return strconv.Itoa(transitions) + "_" + strconv.FormatInt(until.UnixNano(), 10)
}

// parseHandOff reads the label's value: the transitions of the term that
// wrote it and the time.
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

// handOffLock is the Lease lock that writes the hand-off label with the
// release: client-go writes the lock's labels on each update, and the
// release is the last update of a term.
type handOffLock struct {
	*resourcelock.LeaseLock

	mu sync.Mutex
	// value is what the release writes: a hand-off, or "" when there is none.
	value string
	// transitions is the LeaderTransitions of the term held now.
	transitions int
}

// Update writes the lease record; a release (no holder) carries the hand-off.
func (l *handOffLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	if ler.HolderIdentity == "" {
		l.LeaseLock.Labels = map[string]string{HandOffLabel: l.value}
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

// setHandOff sets what the release of the current term writes.
func (l *handOffLock) setHandOff(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.value = handOffValue(l.transitions, until)
}

// readHandOff reads, at the start of a term, the hand-off that the previous
// leader's release left: valid when it was written in the term just before
// this one.
func readHandOff(ctx context.Context, cs kubernetes.Interface, lock *handOffLock) (time.Time, bool) {
	l, err := cs.CoordinationV1().Leases(lock.LeaseMeta.Namespace).Get(ctx, lock.LeaseMeta.Name, metav1.GetOptions{})
	if err != nil || l.Spec.LeaseTransitions == nil {
		return time.Time{}, false
	}
	n, until, ok := parseHandOff(l.Labels[HandOffLabel])
	if !ok || n+1 != int(*l.Spec.LeaseTransitions) {
		return time.Time{}, false
	}
	return until, true
}

// handOff is this replica's part in passing the flow stream between terms:
// what the flow sources handed to the pipeline, whether a writer withheld the
// hand-off, and what the new term was handed.
type handOff struct {
	mu sync.Mutex
	// newest is the oldest of the newest flow times that the flow sources
	// reported at their shutdown; zero when none did.
	newest   time.Time
	reported bool
	// withheld is set by a writer that could not write everything.
	withheld bool
	// from is the previous leader's hand-off to this term.
	from   time.Time
	fromOK bool
}

// begin starts a term that the previous leader handed from (when ok).
func (h *handOff) begin(from time.Time, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.from, h.fromOK = from, ok
	h.reported, h.withheld = false, false
}

// ReadUpTo records, from a flow source that stopped, the time of the newest
// flow that it handed to the pipeline. With several sources the oldest is
// kept: the next leader then reads again what another source handed on after
// it rather than lose what this one had not.
func (l *elector) ReadUpTo(newest time.Time) {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.reported || newest.Before(h.newest) {
		h.newest = newest
	}
	h.reported = true
}

// Withhold keeps this term's release from handing the stream over.
func (l *elector) Withhold() {
	h := &l.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	h.withheld = true
}

// ResumeFrom is the time up to which the previous leader wrote every flow it
// received, when it handed off on a graceful shutdown.
func (l *elector) ResumeFrom() (time.Time, bool) {
	l.handOff.mu.Lock()
	defer l.handOff.mu.Unlock()
	return l.handOff.from, l.handOff.fromOK
}

// writeHandOff runs on a graceful shutdown while this replica leads, after every
// other component's Shutdown: the flow sources have said how far they handed
// flows on, and each writer has written what it held, or withheld the
// hand-off. Unless one did, the release of the Lease tells the next leader to
// resume the stream after the newest flow; otherwise the next leader reads
// its backfill, and may count again what this one wrote.
func (l *elector) writeHandOff() {
	h := &l.handOff
	h.mu.Lock()
	newest, reported, withheld := h.newest, h.reported, h.withheld
	h.mu.Unlock()
	if withheld {
		l.set.Logger.Warn("A writer did not write everything before the lease is given up: the next leader reads the flow source's backfill")
		return
	}
	if !reported {
		return
	}
	l.lock.setHandOff(newest)
	l.set.Logger.Info("Handing the flow stream over with the lease", zap.Time("written_until", newest))
}
