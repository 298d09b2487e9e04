package enforcerextension

import (
	"context"
	"fmt"
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

// handOffTimeout (a variable for the tests) bounds how long a leader on its way out writes what its
// writers hold before it gives the Lease up; past it, the next leader reads
// its flow source's backfill instead.
var handOffTimeout = 10 * time.Second

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

// handOver sets what the release of the current term writes.
func (l *handOffLock) handOver(until time.Time) {
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
// what the flow sources handed to the pipeline, and what the new term was
// handed.
type handOff struct {
	mu sync.Mutex
	// newest is the oldest of the newest flow times that the flow sources
	// reported at their shutdown; zero when none did.
	newest   time.Time
	reported bool
	// from is the previous leader's hand-off to this term.
	from   time.Time
	fromOK bool
}

// HandedOn records, from a flow source that stopped, the time of the newest
// flow that it handed to the pipeline. With several sources the oldest is
// kept: the next leader then reads again what another source handed on after
// it rather than lose what this one had not.
func (e *enforcer) HandedOn(newest time.Time) {
	h := &e.leadership.handOff
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.reported || newest.Before(h.newest) {
		h.newest = newest
	}
	h.reported = true
}

// ResumeFrom is the time up to which the previous leader wrote every flow it
// received, when it handed over on a graceful shutdown.
func (l *leadership) ResumeFrom() (time.Time, bool) {
	l.handOff.mu.Lock()
	defer l.handOff.mu.Unlock()
	return l.handOff.from, l.handOff.fromOK
}

// handOver runs on a graceful shutdown while this replica leads, once the
// flow sources have stopped and handed their last flows on: each writer writes
// what it holds at once, and when every one of those writes succeeded the
// release of the Lease tells the next leader to resume the stream after the
// newest flow. Otherwise the next leader reads its backfill, and may count
// again what this one wrote.
func (e *enforcer) handOver(ctx context.Context) {
	h := &e.leadership.handOff
	h.mu.Lock()
	newest, reported := h.newest, h.reported
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, handOffTimeout)
	defer cancel()
	start := time.Now()
	for _, c := range e.writers() {
		if err := c.drain(ctx); err != nil {
			e.set.Logger.Warn("Could not write everything before giving the lease up: the next leader reads the flow source's backfill",
				zap.String("controller", c.name), zap.Error(err))
			return
		}
	}
	if !reported {
		return
	}
	e.leadership.lock.handOver(newest)
	e.set.Logger.Info("Handing the flow stream over with the lease", zap.Time("written_until", newest),
		zap.Duration("took", time.Since(start)))
}

// errDrain says which keys a writer could not write on its way out.
type errDrain struct {
	keys int
	last error
}

func (e *errDrain) Error() string {
	return fmt.Sprintf("%d objects not written: %v", e.keys, e.last)
}
