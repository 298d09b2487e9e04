// Package flowsourcetest reads the flow receivers' counters in tests, from the
// collector's own test telemetry.
package flowsourcetest

import (
	"go.opentelemetry.io/collector/component/componenttest"
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
