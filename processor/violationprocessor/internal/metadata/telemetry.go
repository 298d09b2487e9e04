package metadata

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/internal/instruments"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Metrics are the component's metrics, as metadata.yaml lists them: its
// own, and those of its store of observed edges.
var Metrics = append([]instruments.Metric{
	{Name: "network_enforcer_violation_acknowledgements", Kind: instruments.Counter, Unit: "{annotation}",
		Description: "Acknowledge annotations, by result: applied, or unknown (naming no record)."},
	{Name: "network_enforcer_violation_buffer_dropped", Kind: instruments.Counter, Unit: "{violation}",
		Description: "Observations not merged into a policy status, by reason: the buffer was full, or the policy is gone. Their events were sent."},
	{Name: "network_enforcer_violation_candidates_dismissed", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Violation candidates that are no violation of a policy, by reason."},
	{Name: "network_enforcer_violation_status_writes", Kind: instruments.Counter, Unit: "{write}",
		Description: "Policy status writes of the status sync, by result."},
	{Name: "network_enforcer_violations_observed", Kind: instruments.Counter, Unit: "{violation}",
		Description: "Violation observations, sent as policy_violation_observed events, by action."},
	{Name: "network_enforcer_violations_unattributed", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Violations that several policies could own and the data plane does not attribute by name."},
}, observed.Metrics...)

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	observed.Fields
	NetworkEnforcerViolationAcknowledgements    metric.Int64Counter `metric:"network_enforcer_violation_acknowledgements"`
	NetworkEnforcerViolationBufferDropped       metric.Int64Counter `metric:"network_enforcer_violation_buffer_dropped"`
	NetworkEnforcerViolationCandidatesDismissed metric.Int64Counter `metric:"network_enforcer_violation_candidates_dismissed"`
	NetworkEnforcerViolationStatusWrites        metric.Int64Counter `metric:"network_enforcer_violation_status_writes"`
	NetworkEnforcerViolationsObserved           metric.Int64Counter `metric:"network_enforcer_violations_observed"`
	NetworkEnforcerViolationsUnattributed       metric.Int64Counter `metric:"network_enforcer_violations_unattributed"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
