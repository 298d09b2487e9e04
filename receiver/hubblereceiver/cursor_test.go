package hubblereceiver

import (
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// TestCursorResumesWhereTheSourceStands: a fresh source is the caller's
// backfill; a hand-off starts two connection periods before it and marks
// what it counted; past it, and on a source read before, a stream resumes
// just after the newest flow.
func TestCursorResumesWhereTheSourceStands(t *testing.T) {
	var c flowsource.Cursor
	since := func() (time.Time, bool) {
		req := &observer.GetFlowsRequest{}
		ok := resume(&c, req)
		return req.GetSince().AsTime(), ok
	}
	if _, ok := since(); ok || c.Begun() {
		t.Fatal("a fresh source resumes somewhere")
	}
	handed := time.Unix(1_800_000_000, 0)
	c.CountedUpTo(handed)
	if got, ok := since(); !ok || !got.Equal(handed.Add(-2*connectionPeriod)) || !c.Begun() {
		t.Fatalf("after a hand-off: since %v (%v), want two connection periods before %v", got, ok, handed)
	}
	if !c.Read(handed.Add(-time.Second)) {
		t.Fatal("a flow before the hand-off is not marked as counted by the other reader")
	}
	if got, _ := since(); !got.Equal(handed.Add(-2 * connectionPeriod)) {
		t.Fatalf("before reading up to the hand-off: since %v", got)
	}
	if !c.Read(handed) {
		t.Fatal("the hand-off's own flow is not marked as counted by the other reader")
	}
	after := handed.Add(time.Second)
	if c.Read(after) {
		t.Fatal("a flow after the hand-off is marked as counted")
	}
	c.Read(handed) // an older flow does not move the cursor back
	if got, _ := since(); !got.Equal(after.Add(time.Nanosecond)) || !c.Latest().Equal(after) {
		t.Fatalf("past the hand-off: since %v, latest %v; want just after %v", got, c.Latest(), after)
	}
}
