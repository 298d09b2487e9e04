package leaderreceiver

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/receiver/leaderreceiver/internal/metadata"
)

// TestDuplicatesAreRememberedForOneToTwoWindows: an accepted identity is a
// duplicate within its window, and in the next generation; two windows after
// the generation that holds it, it is forgotten.
func TestDuplicatesAreRememberedForOneToTwoWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := newDuplicates(5 * time.Minute)
	if !d.claim(1, t0) {
		t.Fatal("an identity never accepted is a duplicate")
	}
	d.settle([]uint64{1}, true, t0)
	for _, at := range []time.Duration{0, 4 * time.Minute, 6 * time.Minute} {
		if d.claim(1, t0.Add(at)) {
			t.Fatalf("not a duplicate %s after its acceptance", at)
		}
	}
	// The generation turned at 6m; the next turn, 5m later, forgets it.
	if !d.claim(1, t0.Add(11*time.Minute)) {
		t.Fatal("still a duplicate two generations later")
	}
	d.settle([]uint64{1}, false, t0.Add(11*time.Minute))
	// A long quiet spell forgets both generations.
	if !d.claim(2, t0.Add(12*time.Minute)) {
		t.Fatal("a new identity is a duplicate")
	}
	d.settle([]uint64{2}, true, t0.Add(12*time.Minute))
	if !d.claim(2, t0.Add(30*time.Minute)) {
		t.Fatal("still a duplicate after two quiet windows")
	}
}

// TestAClaimHoldsUntilSettled: while one request holds a candidate, another
// may not take it; once the pipeline refused it, the sender's retry may.
func TestAClaimHoldsUntilSettled(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := newDuplicates(time.Minute)
	if !d.claim(7, t0) {
		t.Fatal("the first claim was refused")
	}
	if d.claim(7, t0) {
		t.Fatal("a candidate in flight was claimed a second time")
	}
	d.settle([]uint64{7}, false, t0)
	if !d.claim(7, t0) {
		t.Fatal("a candidate that the pipeline refused cannot be sent again")
	}
}

// TestConcurrentSendsOfOneCandidate: two readers send the same candidate at
// the same time (a node changed hands while the first one's request was in
// the pipeline): the pipeline gets it once and the other is counted as a
// duplicate.
func TestConcurrentSendsOfOneCandidate(t *testing.T) {
	next := &gated{entered: make(chan struct{}, 2), release: make(chan struct{})}
	replica, c := startPlaintext(t, next)
	replica.Lead()
	send := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			ld, sl := newScope()
			appendCandidate(sl, 40000, 0)
			done <- export(t, c, ld)
		}()
		return done
	}
	first := send()
	<-next.entered // the first request is in the pipeline
	second := send()
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-next.entered:
		// It reached the pipeline too: counted below.
	}
	close(next.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := next.LogRecordCount(); n != 1 {
		t.Fatalf("the pipeline got the candidate %d times, want once", n)
	}
}

// gated is a sink whose calls report that they entered and then wait for
// release.
type gated struct {
	consumertest.LogsSink
	entered chan struct{}
	release chan struct{}
}

func (g *gated) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	g.entered <- struct{}{}
	<-g.release
	return g.LogsSink.ConsumeLogs(ctx, ld)
}

func (*gated) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// TestIdentityIsTheTimestampAndEveryAttribute: candidates that differ in their
// time or any attribute are not the same; the same content is.
func TestIdentityIsTheTimestampAndEveryAttribute(t *testing.T) {
	d := newDuplicates(time.Minute)
	var keys []string
	_, sl := newScope()
	appendCandidate(sl, 40000, 0)
	appendCandidate(sl, 40000, 0)
	appendCandidate(sl, 40001, 0)
	appendCandidate(sl, 40000, time.Nanosecond)
	lrs := sl.LogRecords()
	// The same attributes in another order are the same candidate.
	reordered := lrs.AppendEmpty()
	reordered.SetTimestamp(lrs.At(0).Timestamp())
	reordered.SetEventName(lrs.At(0).EventName())
	attrs := lrs.At(0).Attributes()
	var ks []string
	for k := range attrs.All() {
		ks = append(ks, k)
	}
	for i := len(ks) - 1; i >= 0; i-- {
		v, _ := attrs.Get(ks[i])
		v.CopyTo(reordered.Attributes().PutEmpty(ks[i]))
	}
	ids := make([]uint64, lrs.Len())
	for i := range ids {
		ids[i] = d.identity(lrs.At(i), &keys)
	}
	if ids[0] != ids[1] || ids[0] != ids[4] {
		t.Fatal("the same candidate has two identities")
	}
	if ids[0] == ids[2] || ids[0] == ids[3] {
		t.Fatal("candidates that differ in a port or their time have one identity")
	}
}

// switchable is a pipeline whose answer the test sets.
type switchable struct {
	consumertest.LogsSink
	mu  sync.Mutex
	err error
}

func (s *switchable) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *switchable) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.LogsSink.ConsumeLogs(ctx, ld)
}

func (*switchable) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// startPlaintext starts the receiver with insecure: true on a replica that
// the test leads, and returns a client of it.
func startPlaintext(t *testing.T, next consumer.Logs) (*enforcerextensiontest.Enforcer, plogotlp.GRPCClient) {
	t.Helper()
	replica, c, _ := startPlaintextWithTelemetry(t, next)
	return replica, c
}

// startPlaintextWithTelemetry is startPlaintext with the receiver's metrics
// kept, for a test that reads them.
func startPlaintextWithTelemetry(t *testing.T, next consumer.Logs) (*enforcerextensiontest.Enforcer, plogotlp.GRPCClient, *componenttest.Telemetry) {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint, cfg.Insecure = addr, true
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	r, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	if err != nil {
		t.Fatal(err)
	}
	replica := enforcerextensiontest.New()
	if err := r.Start(context.Background(), replica.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return replica, plogotlp.NewGRPCClient(conn), tel
}

func export(t *testing.T, c plogotlp.GRPCClient, ld plog.Logs) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}

// TestAStandbyRefusesWithUnavailable: not the leader, the receiver answers
// Unavailable and hands nothing on.
func TestAStandbyRefusesWithUnavailable(t *testing.T) {
	next := &switchable{}
	_, c := startPlaintext(t, next)
	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	err := export(t, c, ld)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "not the leader") {
		t.Fatalf("a standby answered %v, want Unavailable: not the leader", err)
	}
	if n := next.LogRecordCount(); n != 0 {
		t.Fatalf("a standby handed on %d records", n)
	}
}

// TestPipelineErrorsAreAnsweredAsTheOTLPReceiverDoes: a transient error is
// Unavailable, a permanent one Internal; a candidate that the pipeline did not
// take is no duplicate when it comes again, one that it took is.
func TestPipelineErrorsAreAnsweredAsTheOTLPReceiverDoes(t *testing.T) {
	next := &switchable{}
	replica, c := startPlaintext(t, next)
	replica.Lead()
	ld, sl := newScope()
	appendCandidate(sl, 1, 0)

	next.set(errors.New("the queue is full"))
	if err := export(t, c, ld); status.Code(err) != codes.Unavailable {
		t.Fatalf("a transient error answered %v, want Unavailable", err)
	}
	next.set(consumererror.NewPermanent(errors.New("malformed")))
	if err := export(t, c, ld); status.Code(err) != codes.Internal {
		t.Fatalf("a permanent error answered %v, want Internal", err)
	}
	next.set(nil)
	if err := export(t, c, ld); err != nil {
		t.Fatal(err)
	}
	if n := next.LogRecordCount(); n != 1 {
		t.Fatalf("the candidate was handed on %d times, want once", n)
	}
	if err := export(t, c, ld); err != nil {
		t.Fatal(err)
	}
	if n := next.LogRecordCount(); n != 1 {
		t.Fatalf("the candidate sent again was handed on: %d records", n)
	}
}

// TestEdgesAreNeverDuplicates: learned edges and observations are handed on
// however often they come; the writer merges them.
func TestEdgesAreNeverDuplicates(t *testing.T) {
	next := &switchable{}
	replica, c := startPlaintext(t, next)
	replica.Lead()
	for range 2 {
		ld, sl := newScope()
		e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: web, Direction: v1alpha1.DirectionIngress, Peer: api, Protocol: "tcp", Port: 80}
		e.AppendTo(sl)
		learning.SetObserved(sl.LogRecords().At(0), v1alpha1.PeerClassWorkload, 1, base)
		if err := export(t, c, ld); err != nil {
			t.Fatal(err)
		}
	}
	if n := next.LogRecordCount(); n != 2 {
		t.Fatalf("%d edges handed on, want 2", n)
	}
}

var (
	base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	web  = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	api  = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "api"}
)

func newScope() (plog.Logs, plog.ScopeLogs) {
	ld := plog.NewLogs()
	return ld, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
}

// appendCandidate appends a violation candidate of web: a flow from api's
// source port srcPort at base+at.
func appendCandidate(sl plog.ScopeLogs, srcPort uint32, at time.Duration) {
	rec := flow.Record{
		Time: base.Add(at), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Source:      flow.Endpoint{Address: "10.0.0.2", Port: srcPort, Namespace: "shop", Pod: "api-1"},
		Destination: flow.Endpoint{Address: "10.0.0.3", Port: 8080, Namespace: "shop", Pod: "web-1"},
	}
	f := plog.NewLogRecord()
	rec.WriteTo(f)
	learning.AppendCandidate(sl, f, web, v1alpha1.DirectionIngress, nil)
}

// TestProgressIsCountedOnceThePipelineTookTheBatch: a source's progress in a
// batch is the leader's to note, not the pipeline's; it is noted when the
// pipeline took the batch, not when the pipeline refused it, nor on a
// standby; a batch of progress alone is noted as well.
func TestProgressIsCountedOnceThePipelineTookTheBatch(t *testing.T) {
	next := &switchable{}
	replica, c, tel := startPlaintextWithTelemetry(t, next)
	batch := func(at time.Duration, edge bool) plog.Logs {
		ld, sl := newScope()
		if edge {
			e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: web, Direction: v1alpha1.DirectionIngress, Peer: api, Protocol: "tcp", Port: 80}
			e.AppendTo(sl)
		}
		flowsource.WriteProgress(sl.LogRecords().AppendEmpty(), flowsource.Mark{Key: "node-1", Time: base.Add(at)})
		return ld
	}
	counted := func() time.Duration {
		t, ok := replica.CountedOf("node-1")
		if !ok {
			return -1
		}
		return t.Sub(base)
	}

	if err := export(t, c, batch(time.Second, true)); status.Code(err) != codes.Unavailable {
		t.Fatalf("a standby answered %v", err)
	}
	if got := counted(); got != -1 {
		t.Fatalf("a standby noted progress %s", got)
	}
	replica.Lead()
	next.set(errors.New("the queue is full"))
	if err := export(t, c, batch(time.Second, true)); status.Code(err) != codes.Unavailable {
		t.Fatalf("a refused batch answered %v", err)
	}
	if got := counted(); got != -1 {
		t.Fatalf("a batch that the pipeline refused noted progress %s", got)
	}
	next.set(nil)
	if err := export(t, c, batch(time.Second, true)); err != nil {
		t.Fatal(err)
	}
	if got := counted(); got != time.Second {
		t.Fatalf("progress %s after the batch taken, want 1s", got)
	}
	for _, ld := range next.AllLogs() {
		if n := ld.LogRecordCount(); n != 1 {
			t.Fatalf("the pipeline got %d records, want the edge alone", n)
		}
	}
	if err := export(t, c, batch(2*time.Second, false)); err != nil {
		t.Fatal(err)
	}
	if got, n := counted(), len(next.AllLogs()); got != 2*time.Second || n != 1 {
		t.Fatalf("progress alone: noted %s, want 2s; %d batches handed on, want 1", got, n)
	}

	// A progress record without a key is dropped and counted, not handed on.
	ld := batch(3*time.Second, true)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(lrs.Len() - 1).Attributes().Remove(flowsource.AttrProgressKey)
	if err := export(t, c, ld); err != nil {
		t.Fatal(err)
	}
	if got := counted(); got != 2*time.Second {
		t.Fatalf("a progress record without a key noted progress %s", got)
	}
	last := next.AllLogs()[len(next.AllLogs())-1]
	if n := last.LogRecordCount(); n != 1 {
		t.Fatalf("the pipeline got %d records, want the edge alone", n)
	}
	if n := droppedBy(t, tel, reasonMalformedProgress); n != 1 {
		t.Fatalf("%d records dropped as malformed progress, want 1", n)
	}
	// What the readers sent the leader took is accepted or dropped: the
	// edges and the progress of the batches taken (2, 1 and 1), not those
	// of the batches refused.
	if n := recordsCounted(t, tel, "network_enforcer_leader_receiver_records_accepted", ""); n != 4 {
		t.Fatalf("%d records accepted, want 4", n)
	}
}

// droppedBy reads the records that the receiver dropped for reason.
func droppedBy(t *testing.T, tel *componenttest.Telemetry, reason string) int64 {
	t.Helper()
	return recordsCounted(t, tel, "network_enforcer_leader_receiver_records_dropped", reason)
}

// recordsCounted reads the counter metric, of every reason when reason is "".
func recordsCounted(t *testing.T, tel *componenttest.Telemetry, metric, reason string) int64 {
	t.Helper()
	m, err := tel.GetMetric(metric)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if r, _ := dp.Attributes.Value("reason"); reason == "" || r.AsString() == reason {
			n += dp.Value
		}
	}
	return n
}
