package goldmanereceiver

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/internal/metadata"
)

// TestHandOffBetweenLeaders: a leader that was handed Goldmane by the
// previous one (the leader's checkpoint store) starts at the bucket handed
// on, not at start_time_gte's backfill, so that it reads again at most that
// bucket; at its shutdown it hands on the newest bucket it received.
func TestHandOffBetweenLeaders(t *testing.T) {
	all := loadFixtures(t)
	g := dataplanetest.NewGoldmane(all)
	_, cfg := mtlsSetup(t, g)
	handed := all[4].GetFlow().GetStartTime() // the previous leader's newest bucket
	e := enforcerextensiontest.New()
	// The term ends after the receiver has shut down, as the collector shuts
	// the extensions down after the receivers: else the receiver's OnLeading
	// function would wait for the term's end past the test's.
	t.Cleanup(e.Follow)
	e.Checkpoint(flowsource.SourceGoldmane, time.Unix(handed, 0))
	id := component.MustNewID("leader_elector")
	cfg.LeaderElector = &id
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	r, err := newGoldmaneReceiver(set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), e.Host(id)); err != nil {
		t.Fatal(err)
	}
	e.Lead()
	<-g.Opened
	if got := g.LastRequest().GetStartTimeGte(); got != handed {
		t.Fatalf("the new leader's stream starts at %d, want the bucket handed on (%d)", got, handed)
	}
	want, newest := 0, int64(0)
	for _, f := range all {
		s := f.GetFlow().GetStartTime()
		if s < handed {
			continue
		}
		newest = max(newest, s)
		if _, ok := convertFlow(f.GetFlow(), &flow.Record{}); ok {
			want++ // a flow that converts to no record is a counted drop
		}
	}
	if want == len(all) {
		t.Fatal("the fixture's buckets all start at or after the one handed on: the test shows nothing")
	}
	h.WaitRecords(t, want)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := h.Sink.LogRecordCount(); n != want {
		t.Errorf("%d records, want %d: the buckets from the one handed on", n, want)
	}
	got, ok := e.CheckpointOf(flowsource.SourceGoldmane)
	if !slices.Contains(e.Released(), flowsource.SourceGoldmane) || !ok || got.Unix() != newest {
		t.Fatalf("handed on %v (%v, released %v), want the newest bucket %d", got, ok, e.Released(), newest)
	}
}
