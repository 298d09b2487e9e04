package enforcerextensiontest

import (
	"context"
	"slices"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
)

// The fake's leadership, which a test switches.

// SetCallBackFuncs registers the callbacks; run starts now when the fake
// leads.
func (e *Enforcer) SetCallBackFuncs(run leaderelectorextension.StartCallback, stop leaderelectorextension.StopCallback) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if run != nil {
		e.runs = append(e.runs, run)
		if e.leading != nil {
			go run(e.leading)
		}
	}
	if stop != nil {
		e.stops = append(e.stops, stop)
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

// Follow ends the term of leadership.
func (e *Enforcer) Follow() {
	e.mu.Lock()
	wasLeading := e.leading != nil
	if e.stop != nil {
		e.stop()
	}
	e.leading, e.stop = nil, nil
	stops := slices.Clone(e.stops)
	e.mu.Unlock()
	if wasLeading {
		for _, stop := range stops {
			stop()
		}
	}
}
