package flowsource

import (
	"context"
	"errors"
	"testing"
	"time"
)

// store is a checkpoint store in memory, as the fake enforcer keeps one.
type store struct {
	handed      map[string]time.Time
	checkpoints map[string]time.Time
	released    []string
	claimedAt   time.Time
	err         error
}

func (s *store) Take(_ context.Context, source string, start time.Time) (time.Time, bool, error) {
	if s.err != nil {
		return time.Time{}, false, s.err
	}
	s.claimedAt = start
	t, ok := s.handed[source]
	return t, ok, nil
}

func (s *store) Checkpoint(source string, t time.Time) { s.checkpoints[source] = t }
func (s *store) Release(source string)                 { s.released = append(s.released, source) }

// TestCursorTakesAndReleasesASource: what the store's previous reader counted
// is handed_off, and a stream resumes before it; at release the checkpoint is
// the newest flow read, or what was handed on when nothing newer came.
func TestCursorTakesAndReleasesASource(t *testing.T) {
	ctx := context.Background()
	handed := time.Unix(1_800_000_000, 0)
	s := &store{handed: map[string]time.Time{SourceHubbleRelay: handed}, checkpoints: map[string]time.Time{}}

	var quiet Cursor
	if err := quiet.Take(ctx, s, SourceHubbleRelay, handed.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !s.claimedAt.Equal(handed.Add(-time.Hour)) {
		t.Fatalf("the store was asked to claim at %v, want the reader's start", s.claimedAt)
	}
	if at, read, ok := quiet.ResumeAt(time.Minute); !ok || read || !at.Equal(handed.Add(-time.Minute)) {
		t.Fatalf("after a hand-off the stream resumes at %v (read %v, %v), want a margin before %v", at, read, ok, handed)
	}
	if !quiet.Read(handed) || quiet.Read(handed.Add(time.Nanosecond)) {
		t.Fatal("a flow up to the hand-off is not handed_off, or one after it is")
	}
	var fresh Cursor // another source: nothing handed on
	if err := fresh.Take(ctx, s, SourceGoldmane, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := fresh.ResumeAt(0); ok {
		t.Fatal("a source that nobody handed on resumes somewhere: it reads its backfill")
	}

	// Released having read past the hand-off: the newest flow read.
	quiet.Release(s, SourceHubbleRelay)
	if got := s.checkpoints[SourceHubbleRelay]; !got.Equal(handed.Add(time.Nanosecond)) {
		t.Fatalf("released at %v, want the newest flow read", got)
	}
	// A reader that read nothing after its hand-off hands that on.
	var idle Cursor
	if err := idle.Take(ctx, s, SourceHubbleRelay, time.Time{}); err != nil {
		t.Fatal(err)
	}
	idle.Release(s, SourceHubbleRelay)
	if got := s.checkpoints[SourceHubbleRelay]; !got.Equal(handed) {
		t.Fatalf("a quiet reader released at %v, want what it was handed (%v)", got, handed)
	}
	// One that had nothing releases the key without a checkpoint.
	fresh.Release(s, SourceGoldmane)
	if _, ok := s.checkpoints[SourceGoldmane]; ok {
		t.Fatal("a reader that read nothing and was handed nothing checkpointed")
	}
	if want := []string{SourceHubbleRelay, SourceHubbleRelay, SourceGoldmane}; len(s.released) != 3 ||
		s.released[0] != want[0] || s.released[1] != want[1] || s.released[2] != want[2] {
		t.Fatalf("released %v, want %v", s.released, want)
	}

	// A store that fails (its context ended): the reader does not start.
	s.err = context.Canceled
	var c Cursor
	if err := c.Take(ctx, s, SourceHubbleRelay, time.Time{}); !errors.Is(err, context.Canceled) || c.Begun() {
		t.Fatalf("take on a failing store: %v, begun %v", err, c.Begun())
	}
	// Without a store (no leader elector, no membership) there is nothing to take.
	if err := c.Take(ctx, nil, SourceHubbleRelay, time.Time{}); err != nil || c.Begun() {
		t.Fatalf("take without a store: %v, begun %v", err, c.Begun())
	}
	c.Release(nil, SourceHubbleRelay)
}
