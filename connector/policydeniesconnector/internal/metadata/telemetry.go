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
	meter                              metric.Meter
	NetworkEnforcerPolicyDeniesDropped metric.Int64Counter
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerPolicyDeniesDropped, err = builder.meter.Int64Counter(
		"network_enforcer_policy_denies_dropped",
		metric.WithDescription("Violation observations not counted because they would start a series beyond max_series."),
		metric.WithUnit("{violation}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
