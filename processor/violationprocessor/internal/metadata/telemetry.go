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
	NetworkEnforcerViolationAcknowledgements    metric.Int64Counter
	NetworkEnforcerViolationBufferDropped       metric.Int64Counter
	NetworkEnforcerViolationCandidatesDismissed metric.Int64Counter
	NetworkEnforcerViolationStatusWrites        metric.Int64Counter
	NetworkEnforcerViolationsObserved           metric.Int64Counter
	NetworkEnforcerViolationsUnattributed       metric.Int64Counter
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
	builder.NetworkEnforcerViolationAcknowledgements, err = builder.meter.Int64Counter(
		"network_enforcer_violation_acknowledgements",
		metric.WithDescription("Acknowledge annotations, by result: applied, or unknown (naming no record)."),
		metric.WithUnit("{annotation}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerViolationBufferDropped, err = builder.meter.Int64Counter(
		"network_enforcer_violation_buffer_dropped",
		metric.WithDescription("Observations not merged into a policy status, by reason: the buffer was full, or the policy is gone. Their events were sent."),
		metric.WithUnit("{violation}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerViolationCandidatesDismissed, err = builder.meter.Int64Counter(
		"network_enforcer_violation_candidates_dismissed",
		metric.WithDescription("Violation candidates that are no violation of a policy, by reason."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerViolationStatusWrites, err = builder.meter.Int64Counter(
		"network_enforcer_violation_status_writes",
		metric.WithDescription("Policy status writes of the status sync, by result."),
		metric.WithUnit("{write}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerViolationsObserved, err = builder.meter.Int64Counter(
		"network_enforcer_violations_observed",
		metric.WithDescription("Violation observations, sent as policy_violation_observed events, by action."),
		metric.WithUnit("{violation}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerViolationsUnattributed, err = builder.meter.Int64Counter(
		"network_enforcer_violations_unattributed",
		metric.WithDescription("Violations that several policies could own and the data plane does not attribute by name."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
