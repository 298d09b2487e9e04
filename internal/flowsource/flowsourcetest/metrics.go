// Package flowsourcetest reads the flow receivers' counters in tests, from the
// collector's own test telemetry.
package flowsourcetest

import (
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// Counts are the receiver counters at one moment.
type Counts struct {
	Accepted int64
	Lost     int64
	// NodeErrors counts the nodes reported unreadable.
	NodeErrors int64
	// Dropped is keyed by drop reason.
	Dropped map[string]int64
}

// Read returns the current counters; a counter never incremented reads 0.
func Read(tel *componenttest.Telemetry) Counts {
	c := Counts{Dropped: map[string]int64{}}
	sum := func(name string, each func(metricdata.DataPoint[int64])) {
		m, err := tel.GetMetric(name)
		if err != nil {
			return
		}
		if s, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range s.DataPoints {
				each(dp)
			}
		}
	}
	sum(flowsource.MetricFlowsAccepted, func(dp metricdata.DataPoint[int64]) { c.Accepted += dp.Value })
	sum(flowsource.MetricLostEvents, func(dp metricdata.DataPoint[int64]) { c.Lost += dp.Value })
	sum(flowsource.MetricNodeErrors, func(dp metricdata.DataPoint[int64]) { c.NodeErrors += dp.Value })
	sum(flowsource.MetricFlowsDropped, func(dp metricdata.DataPoint[int64]) {
		reason, _ := dp.Attributes.Value("reason")
		c.Dropped[reason.AsString()] += dp.Value
	})
	return c
}

// NewTelemetry creates the shared counters on set's meter provider, for a
// test receiver that has no metadata package of its own (the stream loop's).
func NewTelemetry(t testing.TB, set component.TelemetrySettings, id component.ID) *flowsource.Telemetry {
	t.Helper()
	m := set.MeterProvider.Meter("flowsourcetest")
	var c flowsource.Counters
	for _, x := range []struct {
		into *metric.Int64Counter
		name string
	}{
		{&c.Accepted, flowsource.MetricFlowsAccepted}, {&c.Dropped, flowsource.MetricFlowsDropped},
		{&c.Lost, flowsource.MetricLostEvents}, {&c.NodeErrors, flowsource.MetricNodeErrors},
	} {
		var err error
		if *x.into, err = m.Int64Counter(x.name); err != nil {
			t.Fatal(err)
		}
	}
	return flowsource.NewTelemetry(id, c)
}

// Standard are the collector's standard counts of the log records that a
// receiver handed to the pipeline over one transport: accepted, refused (the
// pipeline or the receiver said no) and failed (a receiver's own error, once
// the collector's receiverhelper.newReceiverMetrics gate tells the two apart).
type Standard struct {
	Accepted, Refused, Failed int64
}

// ReadStandard returns the standard counts of the receiver id on transport
// (empty for a receiver that reports none, as a file input).
func ReadStandard(tel *componenttest.Telemetry, id component.ID, transport string) Standard {
	var s Standard
	want := attribute.NewSet(attribute.String("receiver", id.String()), attribute.String("transport", transport))
	for name, into := range map[string]*int64{
		"otelcol_receiver_accepted_log_records": &s.Accepted,
		"otelcol_receiver_refused_log_records":  &s.Refused,
		"otelcol_receiver_failed_log_records":   &s.Failed,
	} {
		m, err := tel.GetMetric(name)
		if err != nil {
			continue
		}
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, dp := range sum.DataPoints {
				if dp.Attributes.Equals(&want) {
					*into += dp.Value
				}
			}
		}
	}
	return s
}
