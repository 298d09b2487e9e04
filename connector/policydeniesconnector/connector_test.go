package policydeniesconnector

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kubewarden/network-enforcer/connector/policydeniesconnector/internal/metadata"
)

// harness is a connector made by the factory, feeding a metrics sink.
type harness struct {
	conn connector.Logs
	sink *consumertest.MetricsSink
	tel  *componenttest.Telemetry
	logs *observer.ObservedLogs
	id   component.ID
}

func newHarness(t *testing.T, cfg *Config, next consumer.Metrics) *harness {
	t.Helper()
	h := &harness{sink: &consumertest.MetricsSink{}, tel: componenttest.NewTelemetry()}
	if next == nil {
		next = h.sink
	}
	set := connectortest.NewNopSettings(metadata.Type)
	h.id = set.ID
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	core, logs := observer.New(zap.InfoLevel)
	set.Logger = zap.New(core)
	h.logs = logs
	t.Cleanup(func() { _ = h.tel.Shutdown(context.Background()) })

	conn, err := NewFactory().CreateLogsToMetrics(context.Background(), set, cfg, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := conn.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	h.conn = conn
	return h
}

// setClock makes the connector read its time from the returned clock, which
// starts at t0 and moves only when told.
func (h *harness) setClock(t0 time.Time) *time.Time {
	now := t0
	h.conn.(*policyDenies).now = func() time.Time { return now }
	return &now
}

func (h *harness) consume(t *testing.T, ld plog.Logs) {
	t.Helper()
	if err := h.conn.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

// dropped reads the dropped counter: its total, and the attributes of its points.
func (h *harness) dropped(t *testing.T) (int64, []attribute.Set) {
	t.Helper()
	m, err := h.tel.GetMetric(MetricDropped)
	if err != nil {
		return 0, nil
	}
	var n int64
	var sets []attribute.Set
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
		sets = append(sets, dp.Attributes)
	}
	return n, sets
}

// obs is a violation observation: the attributes of its log record.
type obs map[string]any

// deny is a Cilium TCP deny from shop/frontend to shop/cart on port 8080 under
// shop/cart-ingress, with the given attributes changed.
func deny(changes obs) obs {
	o := obs{
		"enforcement.provider":           "cilium",
		"action":                         "deny",
		"network.transport":              "tcp",
		"source.workload.namespace":      "shop",
		"source.workload.name":           "frontend",
		"destination.workload.namespace": "shop",
		"destination.workload.name":      "cart",
		"destination.port":               int64(8080),
		"policy.ref.namespace":           "shop",
		"policy.ref.name":                "cart-ingress",
		// Not a label: must not start a series of its own.
		"source.address": "10.0.1.10",
	}
	for k, v := range changes {
		if v == nil {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
	return o
}

// record is a log record of a batch: an event name and attributes.
type record struct {
	event string
	attrs obs
}

func violation(o obs) record { return record{event: EventName, attrs: o} }

// logs builds a batch. Each inner slice is one scope's records; the scopes are
// split over two resources, so that the walk over every level is exercised.
func logs(t *testing.T, scopes ...[]record) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	rls := []plog.ResourceLogs{ld.ResourceLogs().AppendEmpty(), ld.ResourceLogs().AppendEmpty()}
	for i, recs := range scopes {
		lrs := rls[i%2].ScopeLogs().AppendEmpty().LogRecords()
		for _, r := range recs {
			lr := lrs.AppendEmpty()
			lr.SetEventName(r.event)
			if err := lr.Attributes().FromRaw(r.attrs); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ld
}

// point is one emitted data point, flattened for comparison.
type point struct {
	attrs        map[string]string
	value        int64
	start, stamp pcommon.Timestamp
}

func (p point) String() string {
	keys := make([]string, 0, len(p.attrs))
	for k := range p.attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q ", k, p.attrs[k])
	}
	fmt.Fprintf(&b, "=> %d", p.value)
	return b.String()
}

// emitted checks that md holds exactly the network_enforcer_policy_denies metric
// as a cumulative monotonic sum and returns its points, sorted.
func emitted(t *testing.T, md pmetric.Metrics) []point {
	t.Helper()
	if md.ResourceMetrics().Len() != 1 || md.ResourceMetrics().At(0).ScopeMetrics().Len() != 1 {
		t.Fatalf("want one resource and one scope, got %d resources", md.ResourceMetrics().Len())
	}
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	if sm.Scope().Name() != scopeName {
		t.Errorf("scope %q", sm.Scope().Name())
	}
	if sm.Metrics().Len() != 1 {
		t.Fatalf("want one metric, got %d", sm.Metrics().Len())
	}
	m := sm.Metrics().At(0)
	if m.Name() != "network_enforcer_policy_denies" || m.Unit() != "{violation}" || m.Description() == "" {
		t.Errorf("metric name %q unit %q description %q", m.Name(), m.Unit(), m.Description())
	}
	if m.Type() != pmetric.MetricTypeSum {
		t.Fatalf("metric type %s", m.Type())
	}
	sum := m.Sum()
	if !sum.IsMonotonic() || sum.AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
		t.Errorf("monotonic %v temporality %s", sum.IsMonotonic(), sum.AggregationTemporality())
	}
	var pts []point
	for i := range sum.DataPoints().Len() {
		dp := sum.DataPoints().At(i)
		if dp.ValueType() != pmetric.NumberDataPointValueTypeInt {
			t.Errorf("point %d value type %s", i, dp.ValueType())
		}
		p := point{attrs: map[string]string{}, value: dp.IntValue(), start: dp.StartTimestamp(), stamp: dp.Timestamp()}
		for k, v := range dp.Attributes().All() {
			if v.Type() != pcommon.ValueTypeStr {
				t.Errorf("attribute %s is a %s", k, v.Type())
			}
			p.attrs[k] = v.AsString()
		}
		pts = append(pts, p)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].String() < pts[j].String() })
	return pts
}

// labels are the expected attributes of a point: the deny's labels with changes.
func labels(changes map[string]string) map[string]string {
	l := map[string]string{
		"enforcement.provider":           "cilium",
		"action":                         "deny",
		"network.transport":              "tcp",
		"source.workload.namespace":      "shop",
		"source.workload.name":           "frontend",
		"destination.workload.namespace": "shop",
		"destination.workload.name":      "cart",
		"destination.port":               "8080",
		"policy.ref.namespace":           "shop",
		"policy.ref.name":                "cart-ingress",
	}
	for k, v := range changes {
		l[k] = v
	}
	return l
}

func checkPoints(t *testing.T, got []point, want map[string]int64, wantLabels map[string]map[string]string) {
	t.Helper()
	var g, w []string
	for _, p := range got {
		g = append(g, p.String())
	}
	for name, v := range want {
		w = append(w, point{attrs: wantLabels[name], value: v}.String())
	}
	sort.Strings(w)
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("points:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func TestCountsCumulatively(t *testing.T) {
	h := newHarness(t, &Config{MaxSeries: 100}, nil)
	t0 := time.Unix(1_700_000_000, 0)
	clock := h.setClock(t0)

	series := map[string]map[string]string{
		"frontend": labels(nil),
		"orders":   labels(map[string]string{"source.workload.name": "orders"}),
		"sparse": {
			"enforcement.provider": "istio", "action": "", "network.transport": "",
			"source.workload.namespace": "", "source.workload.name": "",
			"destination.workload.namespace": "", "destination.workload.name": "",
			"destination.port": "", "policy.ref.namespace": "", "policy.ref.name": "",
		},
		"calico": labels(map[string]string{
			"enforcement.provider": "calico", "network.transport": "udp",
			"destination.port": "53", "policy.ref.name": "dns",
		}),
	}

	// Batch 1: repeats, other event names, a sparse event, and a port given as
	// a string (the same series as the integer port).
	h.consume(t, logs(t,
		[]record{
			violation(deny(nil)),
			{event: "network_enforcer.flow", attrs: deny(nil)},
			violation(deny(obs{"source.workload.name": "orders"})),
		},
		[]record{
			violation(deny(obs{"destination.port": "8080"})),
			{event: "", attrs: deny(nil)},
			{event: "network_enforcer.violation_candidate", attrs: deny(nil)},
			violation(obs{"enforcement.provider": "istio"}),
		},
		[]record{violation(deny(nil))},
	))
	all := h.sink.AllMetrics()
	if len(all) != 1 {
		t.Fatalf("%d emissions after batch 1, want 1", len(all))
	}
	first := emitted(t, all[0])
	checkPoints(t, first, map[string]int64{"frontend": 3, "orders": 1, "sparse": 1}, series)
	for _, p := range first {
		if p.start != pcommon.NewTimestampFromTime(t0) || p.stamp <= p.start {
			t.Errorf("%s: start %v stamp %v", p, p.start, p.stamp)
		}
	}

	// Batch 2: only the touched series come out, with their cumulative counts;
	// a new series starts at the batch's time.
	t1 := t0.Add(time.Minute)
	*clock = t1
	h.consume(t, logs(t, []record{
		violation(deny(obs{"source.workload.name": "orders"})),
		violation(deny(obs{
			"enforcement.provider": "calico", "network.transport": "udp",
			"destination.port": int64(53), "policy.ref.name": "dns",
		})),
		violation(deny(obs{"source.workload.name": "orders"})),
	}))
	all = h.sink.AllMetrics()
	if len(all) != 2 {
		t.Fatalf("%d emissions after batch 2, want 2", len(all))
	}
	second := emitted(t, all[1])
	checkPoints(t, second, map[string]int64{"orders": 3, "calico": 1}, series)
	for _, p := range second {
		wantStart := t1
		if p.attrs["source.workload.name"] == "orders" {
			wantStart = t0 // a series keeps its start
		}
		if p.start != pcommon.NewTimestampFromTime(wantStart) {
			t.Errorf("%s: start %v, want %v", p, p.start.AsTime(), wantStart)
		}
		if p.stamp <= first[0].stamp || p.stamp < pcommon.NewTimestampFromTime(t1) {
			t.Errorf("%s: stamp %v not after the first batch's %v", p, p.stamp, first[0].stamp)
		}
	}

	// Batch 3: nothing to count, nothing emitted.
	h.consume(t, logs(t, []record{{event: "network_enforcer.flow", attrs: deny(nil)}}))
	h.consume(t, plog.NewLogs())
	if n := len(h.sink.AllMetrics()); n != 2 {
		t.Fatalf("%d emissions after batches without observations, want 2", n)
	}

	// Batch 4: the clock has not moved (or went back); the points are still
	// stamped after the previous batch's.
	*clock = t0
	h.consume(t, logs(t, []record{violation(deny(nil))}))
	all = h.sink.AllMetrics()
	fourth := emitted(t, all[len(all)-1])
	checkPoints(t, fourth, map[string]int64{"frontend": 4}, series)
	if fourth[0].stamp <= second[0].stamp || fourth[0].start != pcommon.NewTimestampFromTime(t0) {
		t.Errorf("batch 4: start %v stamp %v, previous stamp %v", fourth[0].start, fourth[0].stamp, second[0].stamp)
	}

	if n, _ := h.dropped(t); n != 0 {
		t.Errorf("dropped %d under max_series", n)
	}
	if h.logs.Len() != 0 {
		t.Errorf("logged %v", h.logs.All())
	}
}

func TestMaxSeries(t *testing.T) {
	h := newHarness(t, &Config{MaxSeries: 2}, nil)
	series := map[string]map[string]string{
		"a": labels(map[string]string{"source.workload.name": "a"}),
		"b": labels(map[string]string{"source.workload.name": "b"}),
	}
	from := func(name string) record { return violation(deny(obs{"source.workload.name": name})) }

	h.consume(t, logs(t, []record{from("a"), from("b"), from("c"), from("a"), from("c"), from("d")}))
	all := h.sink.AllMetrics()
	if len(all) != 1 {
		t.Fatalf("%d emissions, want 1", len(all))
	}
	checkPoints(t, emitted(t, all[0]), map[string]int64{"a": 2, "b": 1}, series)
	n, sets := h.dropped(t)
	if n != 3 {
		t.Errorf("dropped %d, want 3", n)
	}
	want := attribute.NewSet(attribute.String("connector", h.id.String()))
	if len(sets) != 1 || !sets[0].Equals(&want) {
		t.Errorf("dropped attributes %v, want %v", sets, want.Encoded(attribute.DefaultEncoder()))
	}

	// Existing series go on counting at the limit; a batch of new series only
	// is dropped whole and emits nothing.
	h.consume(t, logs(t, []record{from("b"), from("e")}))
	h.consume(t, logs(t, []record{from("f")}))
	all = h.sink.AllMetrics()
	if len(all) != 2 {
		t.Fatalf("%d emissions, want 2", len(all))
	}
	checkPoints(t, emitted(t, all[1]), map[string]int64{"b": 2}, series)
	if n, _ := h.dropped(t); n != 5 {
		t.Errorf("dropped %d, want 5", n)
	}

	warnings := h.logs.FilterLevelExact(zap.WarnLevel).All()
	if len(warnings) != 1 || h.logs.Len() != 1 {
		t.Fatalf("want one warning, logged %v", h.logs.All())
	}
	if !strings.Contains(warnings[0].Message, MetricDropped) || warnings[0].ContextMap()["max_series"] != int64(2) {
		t.Errorf("warning %q %v", warnings[0].Message, warnings[0].ContextMap())
	}
}

func TestConsumeMetricsError(t *testing.T) {
	boom := errors.New("boom")
	h := newHarness(t, &Config{MaxSeries: 10}, consumertest.NewErr(boom))
	if err := h.conn.ConsumeLogs(context.Background(), logs(t, []record{violation(deny(nil))})); !errors.Is(err, boom) {
		t.Fatalf("ConsumeLogs() = %v, want %v", err, boom)
	}
}

// TestConcurrent checks that batches counted at once lose no observation and
// that the latest-stamped point of the series carries the total.
func TestConcurrent(t *testing.T) {
	h := newHarness(t, &Config{MaxSeries: 10}, nil)
	const workers, batches, perBatch = 8, 50, 5
	recs := make([]record, perBatch)
	for i := range recs {
		recs[i] = violation(deny(nil))
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range batches {
				if err := h.conn.ConsumeLogs(context.Background(), logs(t, recs)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()

	var latest point
	seen := map[pcommon.Timestamp]bool{}
	for _, md := range h.sink.AllMetrics() {
		pts := emitted(t, md)
		if len(pts) != 1 {
			t.Fatalf("%d points in an emission, want 1", len(pts))
		}
		if seen[pts[0].stamp] {
			t.Fatalf("two emissions stamped %v", pts[0].stamp)
		}
		seen[pts[0].stamp] = true
		if pts[0].stamp > latest.stamp {
			latest = pts[0]
		}
	}
	if want := int64(workers * batches * perBatch); latest.value != want {
		t.Fatalf("latest point %d, want %d", latest.value, want)
	}
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	if f.Type().String() != "policy_denies" {
		t.Errorf("type %q", f.Type())
	}
	if f.LogsToMetricsStability() != component.StabilityLevelDevelopment {
		t.Errorf("logs to metrics stability %s", f.LogsToMetricsStability())
	}
	if _, err := f.CreateLogsToLogs(context.Background(), connectortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop()); err == nil {
		t.Error("logs to logs created")
	}
	// The default configuration's struct is checked by TestComponent.
}

func BenchmarkConsumeLogs(b *testing.B) {
	set := connectortest.NewNopSettings(metadata.Type)
	conn, err := NewFactory().CreateLogsToMetrics(context.Background(), set, &Config{MaxSeries: defaultMaxSeries}, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for i := range 1000 {
		lr := lrs.AppendEmpty()
		lr.SetEventName(EventName)
		if err := lr.Attributes().FromRaw(deny(obs{"source.workload.name": fmt.Sprintf("w%d", i%100)})); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := conn.ConsumeLogs(context.Background(), ld); err != nil {
			b.Fatal(err)
		}
	}
}
