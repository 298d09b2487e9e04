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
	meter                                      metric.Meter
	NetworkEnforcerLearningCoverageGaps        metric.Int64Counter
	NetworkEnforcerLearningDropped             metric.Int64Counter
	NetworkEnforcerLearningEdges               metric.Int64Counter
	NetworkEnforcerLearningViolationCandidates metric.Int64Counter
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerLearningCoverageGaps, err = builder.meter.Int64Counter(
		"network_enforcer_learning_coverage_gaps",
		metric.WithDescription("Gaps in what learning saw, by cause: the data plane's notices of lost events or of a node it could not read, one each, and flow sides whose pod the cache did not know, one a flow."),
		metric.WithUnit("{gap}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLearningDropped, err = builder.meter.Int64Counter(
		"network_enforcer_learning_dropped",
		metric.WithDescription("Flow sides that teach nothing, by reason."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLearningEdges, err = builder.meter.Int64Counter(
		"network_enforcer_learning_edges",
		metric.WithDescription("Flow sides learned as an edge; each distinct edge goes to the writer once a batch."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLearningViolationCandidates, err = builder.meter.Int64Counter(
		"network_enforcer_learning_violation_candidates",
		metric.WithDescription("Flow sides that a WorkloadNetworkPolicy governs, handed on as violation candidates."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
