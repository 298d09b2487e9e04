package observed

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/internal/instruments"
)

// Metrics are the metrics of a store's figures, which each writer of observed
// edges lists among its own (its internal/metadata), and whose instruments it
// gives RegisterMetrics.
var Metrics = []instruments.Metric{
	{Name: "network_enforcer_observed_edges_not_tracked", Kind: instruments.ObservableGauge, Unit: "{edge}",
		Description: "Distinct observed edges that the last statuses counted by estimate only: past the tracking limit, or not listed by an earlier writer."},
	{Name: "network_enforcer_observed_edges_tracked", Kind: instruments.ObservableGauge, Unit: "{edge}",
		Description: "Observed edges held in memory."},
	{Name: "network_enforcer_observed_edges_untracked", Kind: instruments.ObservableCounter, Unit: "{flow}",
		Description: "Flow sides of observed edges not tracked: new edges of an object that tracks max_tracked_edges already."},
	{Name: "network_enforcer_observed_estimators_unreadable", Kind: instruments.ObservableCounter, Unit: "{status}",
		Description: "Statuses whose estimators did not decode: their counts started again from what they list."},
}

// Fields are the instruments of Metrics, which a writer's telemetry builder
// embeds (instruments.Build fills them).
type Fields struct {
	NetworkEnforcerObservedEdgesNotTracked      metric.Int64ObservableGauge   `metric:"network_enforcer_observed_edges_not_tracked"`
	NetworkEnforcerObservedEdgesTracked         metric.Int64ObservableGauge   `metric:"network_enforcer_observed_edges_tracked"`
	NetworkEnforcerObservedEdgesUntracked       metric.Int64ObservableCounter `metric:"network_enforcer_observed_edges_untracked"`
	NetworkEnforcerObservedEstimatorsUnreadable metric.Int64ObservableCounter `metric:"network_enforcer_observed_estimators_unreadable"`
}

// Instruments register the callbacks that report a store's figures: each is
// the Observer of a writer's telemetry builder, for the metric of that figure
// (Metrics: network_enforcer_observed_edges_tracked,
// network_enforcer_observed_edges_not_tracked,
// network_enforcer_observed_edges_untracked and
// network_enforcer_observed_estimators_unreadable), which the writer's
// internal/metadata creates.
type Instruments struct {
	// Tracked is how many observed edges the writer holds in memory.
	Tracked func(metric.Int64Callback) error
	// NotTracked is how many distinct observed edges the last statuses
	// counted by estimate only, over the writer's objects.
	NotTracked func(metric.Int64Callback) error
	// Untracked counts the flow sides of observed edges that were not
	// tracked: new edges of an object that tracks max_tracked_edges already.
	Untracked func(metric.Int64Callback) error
	// BadEstimators counts the statuses whose estimators did not decode;
	// their counts started again from what they list.
	BadEstimators func(metric.Int64Callback) error
}

// RegisterMetrics reports the store's figures through inst, each with attrs.
func (s *Store) RegisterMetrics(inst Instruments, attrs ...attribute.KeyValue) error {
	with := metric.WithAttributes(attrs...)
	observe := func(value func() int64) metric.Int64Callback {
		return func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(value(), with)
			return nil
		}
	}
	return errors.Join(
		inst.Tracked(observe(func() int64 { return int64(s.Edges()) })),
		inst.NotTracked(observe(func() int64 { return int64(s.NotTracked()) })),
		inst.Untracked(observe(s.Untracked)),
		inst.BadEstimators(observe(s.BadEstimators)),
	)
}
