package metadata

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/internal/callbacks"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the component's instruments, created as
// metadata.yaml lists them.
type TelemetryBuilder struct {
	meter metric.Meter
	// Registrations keeps the callbacks, which Shutdown removes.
	callbacks.Registrations
	NetworkEnforcerObservedEdgesNotTracked      metric.Int64ObservableGauge
	NetworkEnforcerObservedEdgesTracked         metric.Int64ObservableGauge
	NetworkEnforcerObservedEdgesUntracked       metric.Int64ObservableCounter
	NetworkEnforcerObservedEstimatorsUnreadable metric.Int64ObservableCounter
	NetworkEnforcerWriterAPIWrites              metric.Int64Counter
	NetworkEnforcerWriterRecordsCountedAlready  metric.Int64Counter
	NetworkEnforcerWriterUnwrittenProposals     metric.Int64ObservableGauge
}

// RegisterNetworkEnforcerObservedEdgesNotTrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesNotTracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesNotTrackedCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerObservedEdgesNotTracked, cb)
}

// RegisterNetworkEnforcerObservedEdgesTrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesTracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesTrackedCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerObservedEdgesTracked, cb)
}

// RegisterNetworkEnforcerObservedEdgesUntrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesUntracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesUntrackedCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerObservedEdgesUntracked, cb)
}

// RegisterNetworkEnforcerObservedEstimatorsUnreadableCallback sets the callback that observes NetworkEnforcerObservedEstimatorsUnreadable.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEstimatorsUnreadableCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerObservedEstimatorsUnreadable, cb)
}

// RegisterNetworkEnforcerWriterUnwrittenProposalsCallback sets the callback that observes NetworkEnforcerWriterUnwrittenProposals.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerWriterUnwrittenProposalsCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerWriterUnwrittenProposals, cb)
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerObservedEdgesNotTracked, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_observed_edges_not_tracked",
		metric.WithDescription("Distinct observed edges that the last statuses counted by estimate only: past the tracking limit, or not listed by an earlier writer."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEdgesTracked, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_observed_edges_tracked",
		metric.WithDescription("Observed edges held in memory."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEdgesUntracked, err = builder.meter.Int64ObservableCounter(
		"network_enforcer_observed_edges_untracked",
		metric.WithDescription("Flow sides of observed edges not tracked: new edges of an object that tracks max_tracked_edges already."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEstimatorsUnreadable, err = builder.meter.Int64ObservableCounter(
		"network_enforcer_observed_estimators_unreadable",
		metric.WithDescription("Statuses whose estimators did not decode: their counts started again from what they list."),
		metric.WithUnit("{status}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerWriterAPIWrites, err = builder.meter.Int64Counter(
		"network_enforcer_writer_api_writes",
		metric.WithDescription("Writes to the Kubernetes API, by operation (create, update, status) and result (ok, refused, error)."),
		metric.WithUnit("{write}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerWriterRecordsCountedAlready, err = builder.meter.Int64Counter(
		"network_enforcer_writer_records_counted_already",
		metric.WithDescription("Observed records skipped because the proposal's counts include their batch already: a reader sent it again, to a new leader or after a lost answer."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerWriterUnwrittenProposals, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_writer_unwritten_proposals",
		metric.WithDescription("Proposals that learned something whose write has not finished yet."),
		metric.WithUnit("{proposal}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
