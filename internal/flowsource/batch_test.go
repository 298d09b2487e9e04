package flowsource_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// streamOf is a stream that emits n records, numbered from first, then ends
// with err, or stays open until it is closed when err is nil.
type streamOf struct {
	first, n int
	err      error
	// gap, when set, is a gap that the stream reports after its records.
	gap *flow.Gap
}

// batchSetup starts a receiver whose successive streams are streams, with
// batch settings cfg. emitted receives a value when a stream has emitted all
// of its records.
func batchSetup(t *testing.T, cfg flowsource.BatchConfig, streams ...streamOf) (*flowsource.GRPCReceiver, *flowsourcetest.Harness, <-chan struct{}) {
	t.Helper()
	set, h := flowsourcetest.NewHarness(t, component.MustNewType("test"))
	return batchSetupTo(t, set, h, h.Sink, cfg, streams...)
}

// batchSetupTo is batchSetup with the pipeline next.
func batchSetupTo(t *testing.T, set receiver.Settings, h *flowsourcetest.Harness, next consumer.Logs, cfg flowsource.BatchConfig,
	streams ...streamOf) (*flowsource.GRPCReceiver, *flowsourcetest.Harness, <-chan struct{}) {
	t.Helper()
	client := configgrpc.NewDefaultClientConfig()
	client.Endpoint = "127.0.0.1:1" // never dialled: gRPC connects lazily
	client.TLS.Insecure = true
	backoff := fastReconnect()
	emitted := make(chan struct{}, len(streams))
	var r *flowsource.GRPCReceiver
	opened := 0
	tel := flowsourcetest.NewTelemetry(t, set.TelemetrySettings, set.ID)
	r, err := flowsource.NewGRPCReceiver(set, tel, &client, backoff, cfg, next, func(*grpc.ClientConn) {},
		func(ctx context.Context) (bool, error) {
			if opened == len(streams) {
				<-ctx.Done()
				return false, ctx.Err()
			}
			s := streams[opened]
			opened++
			for i := range s.n {
				r.Emit(&flow.Record{Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Transport: flow.TransportTCP,
					Source: flow.Endpoint{Namespace: "shop", Pod: strconv.Itoa(s.first + i)}})
			}
			if s.gap != nil {
				r.EmitGap(s.gap)
			}
			emitted <- struct{}{}
			if s.err != nil {
				return true, s.err
			}
			<-ctx.Done()
			return true, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost(), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r, h, emitted
}

// batches returns the size of each batch received, and checks that the records
// arrived in order, each once.
func batches(t *testing.T, h *flowsourcetest.Harness) []int {
	t.Helper()
	var sizes []int
	next := 0
	for _, ld := range h.Sink.AllLogs() {
		sizes = append(sizes, ld.LogRecordCount())
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if lr.EventName() != flow.EventName {
				return
			}
			var rec flow.Record
			rec.ReadFrom(lr)
			if rec.Source.Pod != strconv.Itoa(next) {
				t.Fatalf("record %s arrived where %d was due", rec.Source.Pod, next)
			}
			next++
		})
	}
	return sizes
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For

// neverLingers is a linger longer than any test, beyond what a configuration
// may set, so that a batch goes out only full or when its stream ends, whatever
// the load of the machine.
const neverLingers = time.Hour

func TestBatchGoesOutFull(t *testing.T) {
	r, h, emitted := batchSetup(t, flowsource.BatchConfig{MaxSize: 4, Timeout: neverLingers}, streamOf{n: 10})
	<-emitted
	// Two full batches go out as they fill; the rest waits for its linger.
	waitFor(t, "two full batches", 10*time.Second, func() bool { return flowsourcetest.Read(h.Tel).Accepted == 8 })
	// No wait for a third batch: every record was added before emitted, and
	// what is left can only go out on its linger (an hour) or the stop below.
	if got := batches(t, h); !slices.Equal(got, []int{4, 4}) {
		t.Fatalf("batches %v, want [4 4] before the linger", got)
	}
	// Stopping the stream hands on the open batch before it returns.
	r.StopStreaming()
	if got := batches(t, h); !slices.Equal(got, []int{4, 4, 2}) {
		t.Fatalf("batches %v after stop, want [4 4 2]", got)
	}
	if got := flowsourcetest.Read(h.Tel).Accepted; got != 10 {
		t.Fatalf("accepted %d, want 10", got)
	}
}

// TestGapsGoWithTheirBatch: a gap goes out in the open batch, after the
// records before it; a gap alone is a batch of its own; neither counts as an
// accepted record, and the batches' memory is not shared (the race detector
// watches the reuse).
func TestGapsGoWithTheirBatch(t *testing.T) {
	gap := func(node string) *flow.Gap {
		return &flow.Gap{Provider: flow.ProviderCilium, Cause: flow.GapNodeUnreadable, Node: node}
	}
	r, h, emitted := batchSetup(t, flowsource.BatchConfig{MaxSize: 100, Timeout: neverLingers},
		streamOf{n: 3, gap: gap("a"), err: errors.New("broke")}, streamOf{first: 3, gap: gap("b"), err: errors.New("broke")},
		streamOf{first: 3, n: 2})
	for range 3 {
		<-emitted
	}
	r.StopStreaming()
	var got []string
	for _, ld := range h.Sink.AllLogs() {
		var batch []string
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var g flow.Gap
			if g.ReadFrom(lr) {
				batch = append(batch, "gap "+g.Node)
				return
			}
			var rec flow.Record
			rec.ReadFrom(lr)
			batch = append(batch, rec.Source.Pod)
		})
		got = append(got, strings.Join(batch, " "))
	}
	if want := []string{"0 1 2 gap a", "gap b", "3 4"}; !slices.Equal(got, want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
	if n := flowsourcetest.Read(h.Tel).Accepted; n != 5 {
		t.Fatalf("accepted %d, want the 5 flow records", n)
	}
}

func TestBatchGoesOutAfterLinger(t *testing.T) {
	const linger = 40 * time.Millisecond
	_, h, emitted := batchSetup(t, flowsource.BatchConfig{MaxSize: 1000, Timeout: linger}, streamOf{n: 3}, streamOf{first: 3, n: 2})
	start := time.Now()
	<-emitted
	waitFor(t, "batch", 5*time.Second, func() bool { return h.Sink.LogRecordCount() == 3 })
	if waited := time.Since(start); waited < linger {
		t.Fatalf("a batch of 3 went out after %s, before its linger of %s", waited, linger)
	}
	if got := batches(t, h); !slices.Equal(got, []int{3}) {
		t.Fatalf("batches %v, want [3]", got)
	}
}

func TestBatchGoesOutWhenTheStreamEnds(t *testing.T) {
	// The linger is long; the broken stream's records go out at once all the
	// same, and the next stream's after them.
	r, h, emitted := batchSetup(t, flowsource.BatchConfig{MaxSize: 1000, Timeout: neverLingers},
		streamOf{n: 5, err: errors.New("connection reset")}, streamOf{first: 5, n: 3})
	<-emitted
	waitFor(t, "batch at the end of the stream", 10*time.Second, func() bool { return h.Sink.LogRecordCount() == 5 })
	<-emitted
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := batches(t, h); !slices.Equal(got, []int{5, 3}) {
		t.Fatalf("batches %v, want [5 3]", got)
	}
	if got := flowsourcetest.Read(h.Tel).Accepted; got != 8 {
		t.Fatalf("accepted %d, want 8", got)
	}
	// Each batch is a receive operation of the collector's standard telemetry.
	if got := flowsourcetest.ReadStandard(h.Tel, r.Settings.ID, "grpc"); got != (flowsourcetest.Standard{Accepted: 8}) {
		t.Fatalf("standard counts %+v, want 8 accepted", got)
	}
}

func TestNothingIsLostAtShutdown(t *testing.T) {
	r, h, emitted := batchSetup(t, flowsource.BatchConfig{MaxSize: 1000, Timeout: time.Second}, streamOf{n: 7})
	<-emitted
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := batches(t, h); !slices.Equal(got, []int{7}) {
		t.Fatalf("batches %v after shutdown, want [7]", got)
	}
}

// TestRefusedBatchIsCountedAsDropped: a batch that the pipeline refuses is
// counted, record by record, as refused_by_pipeline, not as accepted, and as
// refused in the collector's standard counts.
func TestRefusedBatchIsCountedAsDropped(t *testing.T) {
	set, h := flowsourcetest.NewHarness(t, component.MustNewType("test"))
	r, _, emitted := batchSetupTo(t, set, h, consumertest.NewErr(errors.New("memory limit reached")),
		flowsource.BatchConfig{MaxSize: 1000, Timeout: time.Second}, streamOf{n: 4})
	<-emitted
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := flowsourcetest.Read(h.Tel)
	if c.Dropped[string(flowsource.DropRefusedByPipeline)] != 4 || c.Accepted != 0 {
		t.Fatalf("counts %+v, want 4 dropped as refused_by_pipeline and none accepted", c)
	}
	if got := flowsourcetest.ReadStandard(h.Tel, r.Settings.ID, "grpc"); got != (flowsourcetest.Standard{Refused: 4}) {
		t.Fatalf("standard counts %+v, want 4 refused", got)
	}
}

func TestBatchConfigCheck(t *testing.T) {
	if errs := flowsource.NewDefaultBatchConfig().Check("batch"); len(errs) != 0 {
		t.Fatalf("defaults: %v", errs)
	}
	for _, tc := range []struct {
		cfg  flowsource.BatchConfig
		want []string
	}{
		{flowsource.BatchConfig{MaxSize: 0, Timeout: time.Millisecond}, []string{"invalid batch::max_size 0: must be at least 1"}},
		{flowsource.BatchConfig{MaxSize: 1, Timeout: -time.Second}, []string{"invalid batch::timeout -1s: must be positive and at most 1s"}},
		{flowsource.BatchConfig{MaxSize: 1, Timeout: time.Minute}, []string{"invalid batch::timeout 1m0s: must be positive and at most 1s"}},
	} {
		var got []string
		for _, err := range tc.cfg.Check("batch") {
			got = append(got, err.Error())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

// fastReconnect re-opens a stream after 10ms, every time.
func fastReconnect() flowsource.ReconnectConfig {
	r := flowsource.NewDefaultReconnectConfig()
	r.InitialInterval, r.MaxInterval = 10*time.Millisecond, 10*time.Millisecond
	return r
}

func TestABatchMarkedTakenIsReadAsTaken(t *testing.T) {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty()
	flowsource.StampBatch(ld, "reader-1", 3)
	if flowsource.WasTaken(ld) {
		t.Fatal("a batch never taken reads as taken")
	}
	flowsource.MarkTaken(ld)
	if !flowsource.WasTaken(ld) {
		t.Fatal("a batch marked taken does not read as taken")
	}
	if sender, seq, ok := flowsource.BatchOf(ld.ResourceLogs().At(0).Resource()); !ok || sender != "reader-1" || seq != 3 {
		t.Fatalf("the mark changed the batch's name: %q %d %v", sender, seq, ok)
	}
	if flowsource.WasTaken(plog.NewLogs()) {
		t.Fatal("an empty batch reads as taken")
	}
}
