package flowsourcetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// Harness collects what a receiver under test emits: its records, counters and logs.
type Harness struct {
	Sink *consumertest.LogsSink
	Tel  *componenttest.Telemetry
	Logs *observer.ObservedLogs
}

// NewHarness returns receiver settings that report into a new Harness.
func NewHarness(t *testing.T, typ component.Type) (receiver.Settings, *Harness) {
	t.Helper()
	h := &Harness{Sink: &consumertest.LogsSink{}, Tel: componenttest.NewTelemetry()}
	set := receivertest.NewNopSettings(typ)
	set.TelemetrySettings = h.Tel.NewTelemetrySettings()
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	h.Logs = logs
	t.Cleanup(func() { _ = h.Tel.Shutdown(context.Background()) })
	return set, h
}

// Start starts r and shuts it down when the test ends.
func Start(t *testing.T, r receiver.Logs) {
	t.Helper()
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// Records returns the records received so far, each as Describe writes it.
func (h *Harness) Records() []string {
	var out []string
	for _, ld := range h.Sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if lr.EventName() != flow.EventName {
				return // a marked batch's progress: the receiver's bookkeeping
			}
			var r flow.Record
			r.ReadFrom(lr)
			out = append(out, Describe(r))
		})
	}
	return out
}

// FlowCount is how many flow records have arrived, without the progress
// records that close a marked batch.
func (h *Harness) FlowCount() int {
	n := 0
	for _, ld := range h.Sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if lr.EventName() == flow.EventName {
				n++
			}
		})
	}
	return n
}

// Gaps returns the gap records received so far, described as
// "<cause> <node> <lost>".
func (h *Harness) Gaps() []string {
	var out []string
	for _, ld := range h.Sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var g flow.Gap
			if g.ReadFrom(lr) {
				out = append(out, fmt.Sprintf("%s %s %d", g.Cause, g.Node, g.Lost))
			}
		})
	}
	return out
}

// WaitRecords waits until n records have arrived and returns them described.
func (h *Harness) WaitRecords(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for h.FlowCount() < n {
		if time.Now().After(deadline) {
			t.Fatalf("got %d records, want %d:\n%s", h.FlowCount(), n, strings.Join(h.Records(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return h.Records()
}

// WaitLog waits until a log entry's message or fields mention substr.
func (h *Harness) WaitLog(t *testing.T, substr string) {
	t.Helper()
	h.WaitLogs(t, substr, 1)
}

// WaitLogs waits until n log entries mention substr, as WaitLog does. A
// receiver logs "flow stream ended" once per stream that it opened or tried to
// open, so waiting for several of them waits for that many rounds of its
// reconnect loop: a check that nothing arrived then covers those rounds, however
// slow the machine.
func (h *Harness) WaitLogs(t *testing.T, substr string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := 0
		for _, e := range h.Logs.All() {
			if strings.Contains(e.Message, substr) || strings.Contains(fmt.Sprint(e.ContextMap()), substr) {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d log entries mention %q, want %d: %v", got, substr, n, h.Logs.All())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitDrops waits until the drop counters reach at least want.
func (h *Harness) WaitDrops(t *testing.T, want map[string]int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := Read(h.Tel).Dropped
		done := true
		for reason, n := range want {
			done = done && got[reason] >= n
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("drops %v, want at least %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitStandard waits until the collector's standard counts of the receiver id
// on transport are want, and fails t when they are not within ten seconds. A
// batch is counted once the pipeline has returned it, a moment after the sink
// has its records.
func (h *Harness) WaitStandard(t *testing.T, id component.ID, transport string, want Standard) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := ReadStandard(h.Tel, id, transport)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("standard counts of %s on transport %q: %+v, want %+v", id, transport, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Describe writes a record on one line: outcome direction reporter transport,
// source -> destination:port, the policy, and the pending outcome when set.
func Describe(r flow.Record) string {
	end := func(e flow.Endpoint) string {
		if e.External != "" {
			return string(e.External) + ":" + e.Address
		}
		return fmt.Sprintf("%s/%s(%s/%s)", e.Namespace, e.Pod, e.WorkloadKind, e.WorkloadName)
	}
	policy := ""
	if !r.Policy.IsZero() {
		policy = r.Policy.Kind + "/" + r.Policy.Namespace + "/" + r.Policy.Name
	}
	s := fmt.Sprintf("%s %s %s %s %s -> %s:%d policy=%s", r.Outcome, r.Direction, r.Reporter, r.Transport,
		end(r.Source), end(r.Destination), r.Destination.Port, policy)
	if r.PendingOutcome != "" {
		s += fmt.Sprintf(" pending=%s:%s/%s/%s", r.PendingOutcome, r.PendingPolicy.Kind, r.PendingPolicy.Namespace, r.PendingPolicy.Name)
	}
	if r.Count > 1 {
		s += fmt.Sprintf(" count=%d", r.Count)
	}
	return s
}
