package flowsource_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// marked is one EmitMarked call; rec false emits no record.
type marked struct {
	rec bool
	key string
	at  time.Time
}

// markSetup starts a receiver whose one stream makes the calls, then stays
// open; it returns the marks handed on so far.
func markSetup(t *testing.T, next func(*flowsourcetest.Harness) consumer.Logs, cfg flowsource.BatchConfig, calls ...marked) (*flowsource.GRPCReceiver, *flowsourcetest.Harness, func() []flowsource.Mark) {
	t.Helper()
	set, h := flowsourcetest.NewHarness(t, component.MustNewType("test"))
	client := configgrpc.NewDefaultClientConfig()
	client.Endpoint = "127.0.0.1:1" // never dialled
	client.TLS.Insecure = true
	var r *flowsource.GRPCReceiver
	opened := false
	r, err := flowsource.NewGRPCReceiver(set, flowsourcetest.NewTelemetry(t, set.TelemetrySettings, set.ID), &client,
		fastReconnect(), cfg, next(h),
		func(*grpc.ClientConn) {}, func(ctx context.Context) (bool, error) {
			if !opened {
				opened = true
				for _, c := range calls {
					var rec *flow.Record
					if c.rec {
						rec = &flow.Record{Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Transport: flow.TransportTCP}
					}
					r.EmitMarked(rec, c.key, c.at)
				}
			}
			<-ctx.Done()
			return true, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []flowsource.Mark
	r.OnAccepted(func(marks []flowsource.Mark) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, marks...)
	})
	if err := r.Start(context.Background(), componenttest.NewNopHost(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r, h, func() []flowsource.Mark {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func sink(h *flowsourcetest.Harness) consumer.Logs { return h.Sink }

// TestMarksFollowTheirBatch: a batch's marks, the newest input of each key
// that it covers (with a record or not), are handed on once the pipeline has
// the batch, one mark a key a batch.
func TestMarksFollowTheirBatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r, h, marks := markSetup(t, sink, flowsource.BatchConfig{MaxSize: 3, Timeout: neverLingers},
		marked{true, "a", t0}, marked{false, "b", t0.Add(1)}, marked{true, "a", t0.Add(2)},
		marked{true, "b", t0.Add(3)}, // fills the first batch
		marked{false, "a", t0.Add(4)})
	waitFor(t, "the full batch's marks", 10*time.Second, func() bool { return len(marks()) == 2 })
	want := []flowsource.Mark{{Key: "a", Time: t0.Add(2)}, {Key: "b", Time: t0.Add(3)}}
	if got := marks(); !slices.Equal(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	r.StopStreaming() // the open batch, a mark alone, goes out
	want = append(want, flowsource.Mark{Key: "a", Time: t0.Add(4)})
	if got := marks(); !slices.Equal(got, want) {
		t.Fatalf("marks %v after the stop, want %v", got, want)
	}
	// The batch with records closes with a progress record per mark, after
	// its records, for the leader that takes it; the batch of a mark alone
	// does not go to the pipeline.
	var events []string
	var progress []flowsource.Mark
	for _, ld := range h.Sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					events = append(events, lr.EventName())
					if m, ok := flowsource.ReadProgress(lr); ok {
						progress = append(progress, m)
					}
				}
			}
		}
	}
	wantEvents := []string{flow.EventName, flow.EventName, flow.EventName, flowsource.ProgressEventName, flowsource.ProgressEventName}
	if !slices.Equal(events, wantEvents) {
		t.Fatalf("records %v, want %v", events, wantEvents)
	}
	if full := want[:2]; !slices.EqualFunc(progress, full, func(a, b flowsource.Mark) bool { return a.Key == b.Key && a.Time.Equal(b.Time) }) {
		t.Fatalf("progress %v, want %v", progress, full)
	}
}

// TestMarksAloneGoOutAfterTheLinger: a batch of marks without records goes
// out when its linger ends, as a batch of records does.
func TestMarksAloneGoOutAfterTheLinger(t *testing.T) {
	t0 := time.Unix(1000, 0)
	_, _, marks := markSetup(t, sink, flowsource.BatchConfig{MaxSize: 10, Timeout: time.Millisecond}, marked{false, "a", t0})
	waitFor(t, "the mark", 10*time.Second, func() bool { return len(marks()) == 1 })
}

// TestRefusedBatchHandsNoMarksOn: the marks of a batch that the pipeline
// refused are not handed on.
func TestRefusedBatchHandsNoMarksOn(t *testing.T) {
	refuse := func(*flowsourcetest.Harness) consumer.Logs {
		return consumertest.NewErr(errors.New("memory limit reached"))
	}
	r, h, marks := markSetup(t, refuse, flowsource.BatchConfig{MaxSize: 10, Timeout: neverLingers}, marked{true, "a", time.Unix(1000, 0)})
	r.StopStreaming()
	if n := flowsourcetest.Read(h.Tel).Dropped["refused_by_pipeline"]; n != 1 {
		t.Fatalf("refused %d, want 1", n)
	}
	if got := marks(); len(got) != 0 {
		t.Fatalf("marks %v of a refused batch were handed on", got)
	}
}
