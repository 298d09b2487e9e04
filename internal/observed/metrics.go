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
	if _, err := m.Int64ObservableGauge(MetricTracked, metric.WithUnit("{edge}"),
		metric.WithDescription("Observed edges held in memory."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(s.Edges()), with)
			return nil
		})); err != nil {
		return err
	}
	if _, err := m.Int64ObservableCounter(MetricUntrackedFlows, metric.WithUnit("{flow}"),
		metric.WithDescription("Flow sides of observed edges not tracked: new edges of an object that tracks max_tracked_edges already."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(s.Untracked(), with)
			return nil
		})); err != nil {
		return err
	}
	if _, err := m.Int64ObservableGauge(MetricNotTracked, metric.WithUnit("{edge}"),
		metric.WithDescription("Distinct observed edges that the last statuses counted by estimate only: past the tracking limit, or not listed by an earlier writer."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(s.NotTracked()), with)
			return nil
		})); err != nil {
		return err
	}
	_, err := m.Int64ObservableCounter(MetricBadEstimators, metric.WithUnit("{status}"),
		metric.WithDescription("Statuses whose estimators did not decode: their counts started again from what they list."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(s.BadEstimators(), with)
			return nil
		}))
	return err
}
