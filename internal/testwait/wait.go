// Package testwait is the tests' one way to wait for a condition: poll it,
// soon at first and then less often, and fail the test, naming what it
// waited for, when it does not hold in time.
package testwait

import (
	"testing"
	"time"
)

// maxPoll is the longest pause between two looks at a condition: soon
// enough that a test does not wait much past the moment it holds.
const maxPoll = 100 * time.Millisecond

// For waits until cond holds, looking again after 1 ms, then twice as long
// each time up to 100 ms; after timeout it fails tb (Fatalf).
func For(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	if !wait(timeout, time.Millisecond, maxPoll, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Poll is For at a fixed interval: for a condition that is costly to look at
// (one that runs a program).
func Poll(tb testing.TB, what string, timeout, every time.Duration, cond func() bool) {
	tb.Helper()
	if !wait(timeout, every, every, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Try is For that reports with Errorf and returns false, for a caller that
// goes on to clean up.
func Try(tb testing.TB, what string, timeout time.Duration, cond func() bool) bool {
	tb.Helper()
	if !wait(timeout, time.Millisecond, maxPoll, cond) {
		tb.Errorf("timed out after %s waiting for %s", timeout, what)
		return false
	}
	return true
}

// wait looks at cond until it holds (true) or timeout passes (false), the
// pause between looks growing from first to most.
func wait(timeout, first, most time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := first
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, most)
	}
	return true
}
