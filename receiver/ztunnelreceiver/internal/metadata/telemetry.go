package metadata

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the component's instruments, created as
// metadata.yaml lists them.
type TelemetryBuilder struct {
	meter                                    metric.Meter
	NetworkEnforcerReceiverFlowsAccepted     metric.Int64Counter
	NetworkEnforcerReceiverFlowsDropped      metric.Int64Counter
	NetworkEnforcerReceiverJoinEvictions     metric.Int64Counter
	NetworkEnforcerReceiverRefusedStandby    metric.Int64Counter
	NetworkEnforcerReceiverUnjoinedDecisions metric.Int64Counter
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerReceiverFlowsAccepted, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_flows_accepted",
		metric.WithDescription("Flows turned into flow records."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverFlowsDropped, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_flows_dropped",
		metric.WithDescription("Input messages not turned into flow records, by reason."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverJoinEvictions, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_join_evictions",
		metric.WithDescription("Lines that left the join before the join window because it held its maximum: a held denial or decision went out unjoined, an allowed line was no longer joinable."),
		metric.WithUnit("{line}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverRefusedStandby, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_refused_standby",
		metric.WithDescription("OTLP log records that this standby replica refused, for the sender to retry with the leader."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverUnjoinedDecisions, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_unjoined_decisions",
		metric.WithDescription("Policy decisions that no access line joined within the join window; their destination port is 0."),
		metric.WithUnit("{decision}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
