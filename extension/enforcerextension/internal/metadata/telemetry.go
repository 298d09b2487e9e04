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
	meter                                metric.Meter
	NetworkEnforcerControllerReconciles  metric.Int64Counter
	NetworkEnforcerLeaderChangesObserved metric.Int64Counter
	NetworkEnforcerLeaderTerms           metric.Int64Counter
	NetworkEnforcerMembers               metric.Int64Gauge
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerControllerReconciles, err = builder.meter.Int64Counter(
		"network_enforcer_controller_reconciles",
		metric.WithDescription("Reconciles of the enforcer's controllers (promotion, render, policy-status, proposal-writer), by result (ok, error)."),
		metric.WithUnit("{reconcile}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderChangesObserved, err = builder.meter.Int64Counter(
		"network_enforcer_leader_changes_observed",
		metric.WithDescription("Changes of the lease holder that this replica observed, its own included."),
		metric.WithUnit("{change}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderTerms, err = builder.meter.Int64Counter(
		"network_enforcer_leader_terms",
		metric.WithDescription("Terms of leadership that this replica began."),
		metric.WithUnit("{term}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerMembers, err = builder.meter.Int64Gauge(
		"network_enforcer_members",
		metric.WithDescription("Live members that share the flow sources' keys, as this replica sees them, itself included."),
		metric.WithUnit("{member}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
