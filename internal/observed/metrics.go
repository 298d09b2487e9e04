package observed

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of a store; each writer of observed edges reports its own,
// with its component's attribute.
const (
	// MetricTracked is how many observed edges the writer holds in memory.
	MetricTracked = "network_enforcer_observed_edges_tracked"
	// MetricUntrackedFlows counts the flow sides of observed edges that were
	// not tracked: new edges of an object that tracks max_tracked_edges
	// already.
	MetricUntrackedFlows = "network_enforcer_observed_edges_untracked"
	// MetricNotTracked is how many distinct observed edges the last statuses
	// counted by estimate only, over the writer's objects.
	MetricNotTracked = "network_enforcer_observed_edges_not_tracked"
	// MetricBadEstimators counts the statuses whose estimators did not
	// decode; their counts started again from what they list.
	MetricBadEstimators = "network_enforcer_observed_estimators_unreadable"
)

// RegisterMetrics reports the store's figures through m, each with attrs.
func (s *Store) RegisterMetrics(m metric.Meter, attrs ...attribute.KeyValue) error {
	with := metric.WithAttributes(attrs...)
	observe := func(value func() int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(value(), with)
			return nil
		}
	}
	for _, g := range []struct {
		name, unit, desc string
		value            func() int64
	}{
		{MetricTracked, "{edge}", "Observed edges held in memory.", func() int64 { return int64(s.Edges()) }},
		{MetricNotTracked, "{edge}", "Distinct observed edges that the last statuses counted by estimate only: past the tracking limit, or not listed by an earlier writer.",
			func() int64 { return int64(s.NotTracked()) }},
	} {
		if _, err := m.Int64ObservableGauge(g.name, metric.WithUnit(g.unit), metric.WithDescription(g.desc),
			metric.WithInt64Callback(observe(g.value))); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		name, unit, desc string
		value            func() int64
	}{
		{MetricUntrackedFlows, "{flow}", "Flow sides of observed edges not tracked: new edges of an object that tracks max_tracked_edges already.", s.Untracked},
		{MetricBadEstimators, "{status}", "Statuses whose estimators did not decode: their counts started again from what they list.", s.BadEstimators},
	} {
		if _, err := m.Int64ObservableCounter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc),
			metric.WithInt64Callback(observe(c.value))); err != nil {
			return err
		}
	}
	return nil
}
