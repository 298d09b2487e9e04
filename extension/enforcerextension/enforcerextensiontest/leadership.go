package enforcerextensiontest

import (
	"context"
	"slices"
	"time"
)

// The fake's leadership, which the tests switch.

func (e *Enforcer) OnLeading(run func(context.Context)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs = append(e.runs, run)
	if e.leading != nil {
		go run(e.leading)
	}
}

func (e *Enforcer) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading != nil
}

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

func (e *Enforcer) ResumeFrom() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resume, !e.resume.IsZero()
}

func (e *Enforcer) SetResumeFrom(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resume = t
}

func (e *Enforcer) HandedOn(newest time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handedOn = append(e.handedOn, newest)
}

func (e *Enforcer) HandedOnTimes() []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.handedOn)
}

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

func (e *Enforcer) Follow() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stop != nil {
		e.stop()
	}
	e.leading, e.stop = nil, nil
}
