package instruments

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// shared are fields that several builders embed.
type shared struct {
	Edges metric.Int64ObservableCounter `metric:"test_edges"`
}

type builder struct {
	Set
	shared
	Flows metric.Int64Counter         `metric:"test_flows"`
	Nodes metric.Int64Gauge           `metric:"test_nodes"`
	Held  metric.Int64ObservableGauge `metric:"test_held"`
}

var table = []Metric{
	{Name: "test_flows", Kind: Counter, Unit: "{flow}", Description: "Flows."},
	{Name: "test_nodes", Kind: Gauge, Unit: "{node}", Description: "Nodes."},
	{Name: "test_held", Kind: ObservableGauge, Unit: "{edge}", Description: "Held."},
	{Name: "test_edges", Kind: ObservableCounter, Unit: "{edge}", Description: "Edges, in an embedded struct."},
}

// TestBuildFillsEachFieldOfTheTable: each row becomes its field's
// instrument, as the row describes it; a callback observes until Shutdown.
func TestBuildFillsEachFieldOfTheTable(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	var b builder
	if err := Build(meter, table, &b); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.Flows.Add(ctx, 3)
	b.Nodes.Record(ctx, 2)
	if err := b.Observe(b.Held, func(_ context.Context, o metric.Int64Observer) error { o.Observe(7); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := b.Observer(b.Edges)(func(_ context.Context, o metric.Int64Observer) error { o.Observe(5); return nil }); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	if got["test_flows"] != 3 || got["test_nodes"] != 2 || got["test_held"] != 7 || got["test_edges"] != 5 {
		t.Fatalf("values %v", got)
	}
	b.Shutdown()
	if got := collect(t, reader); got["test_held"] != 0 {
		t.Fatalf("the callback still observes after Shutdown: %v", got)
	}
}

// TestBuildRefusesATableAndAStructThatDisagree: a row without its field, a
// field without its row and a field of the wrong type are each an error.
func TestBuildRefusesATableAndAStructThatDisagree(t *testing.T) {
	meter := sdkmetric.NewMeterProvider().Meter("test")
	wrong := []Metric{
		{Name: "test_flows", Kind: Gauge, Unit: "{flow}"},
		{Name: "test_nodes", Kind: Gauge, Unit: "{node}"},
		{Name: "test_edges", Kind: ObservableCounter},
		{Name: "test_extra", Kind: Counter},
	}
	err := Build(meter, wrong, &builder{})
	for _, want := range []string{"metric test_flows: its field is a", "metric test_extra: no field tagged with it",
		"field tagged test_held: no such metric in the table"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}

// collect reads the int64 value of each metric (the sum of its points).
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] += p.Value
				}
			}
		}
	}
	return out
}
