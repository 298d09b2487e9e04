package enforcerextensiontest

import (
	"context"
	"slices"
	"time"
)

// The fake's leadership, which a test switches.

// OnLeading registers run, started now when the fake leads.
func (e *Enforcer) OnLeading(run func(context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs = append(e.runs, run)
	if e.leading != nil {
		go run(e.leading)
	}
}

// IsLeader reports whether Lead was called, and Follow not since.
func (e *Enforcer) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading != nil
}

// Lead starts a term of leadership: the OnLeading functions start, and each
// writer's resync runs.
func (e *Enforcer) Lead() {
	e.mu.Lock()
	if e.leading != nil {
		e.mu.Unlock()
		return
	}
	e.leading, e.stop = context.WithCancel(context.Background())
	runs, writers := slices.Clone(e.runs), slices.Clone(e.writers)
	ctx := e.leading
	e.mu.Unlock()
	for _, run := range runs {
		go run(ctx)
	}
	for _, w := range writers {
		w.resyncNow()
	}
}

// ResumeFrom answers what SetResumeFrom set.
func (e *Enforcer) ResumeFrom() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resume, !e.resume.IsZero()
}

// SetResumeFrom sets the previous leader's hand-off that the next term sees.
func (e *Enforcer) SetResumeFrom(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resume = t
}

// HandedOn records a flow source's report.
func (e *Enforcer) HandedOn(newest time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handedOn = append(e.handedOn, newest)
}

// HandedOnTimes returns what the flow sources reported at their shutdown.
func (e *Enforcer) HandedOnTimes() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.handedOn)
}

// HandOff runs the writers' hand-off, as a leader's shutdown does: each
// writer's pending keys are queued at once; Drain then writes them.
func (e *Enforcer) HandOff() {
	e.mu.Lock()
	writers := slices.Clone(e.writers)
	e.mu.Unlock()
	for _, w := range writers {
		w.mu.Lock()
		pending := w.handOff
		w.mu.Unlock()
		if pending == nil {
			continue
		}
		for _, key := range pending() {
			w.Enqueue(key, 0)
		}
	}
}

// Follow ends the term of leadership.
func (e *Enforcer) Follow() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	e.leading, e.stop = nil, nil
}
