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
	meter                                        metric.Meter
	NetworkEnforcerLeaderReceiverRecordsAccepted metric.Int64Counter
	NetworkEnforcerLeaderReceiverRecordsDropped  metric.Int64Counter
	NetworkEnforcerLeaderReceiverRecordsRefused  metric.Int64Counter
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerLeaderReceiverRecordsAccepted, err = builder.meter.Int64Counter(
		"network_enforcer_leader_receiver_records_accepted",
		metric.WithDescription("Log records that the leader took from the readers and handed to the pipeline."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderReceiverRecordsDropped, err = builder.meter.Int64Counter(
		"network_enforcer_leader_receiver_records_dropped",
		metric.WithDescription("Log records dropped by reason (duplicate: a violation candidate accepted within duplicate_window; malformed_progress: a source's progress record without a key or a time)."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderReceiverRecordsRefused, err = builder.meter.Int64Counter(
		"network_enforcer_leader_receiver_records_refused",
		metric.WithDescription("Log records refused because this replica is not the leader: the sender retries."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
