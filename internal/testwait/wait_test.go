package testwait

import (
	"testing"
	"time"
)

// TestWait: a condition that comes to hold ends the wait with true; one that
// never does ends it with false.
func TestWait(t *testing.T) {
	n := 0
	if !wait(time.Minute, time.Millisecond, maxPoll, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("a condition true at its third look: looked %d times", n)
	}
	if wait(30*time.Millisecond, time.Millisecond, maxPoll, func() bool { return false }) {
		t.Fatal("a condition never true held")
	}
}
