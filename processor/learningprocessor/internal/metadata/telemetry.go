package metadata

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/internal/instruments"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// Metrics are the component's metrics, as metadata.yaml lists them.
var Metrics = []instruments.Metric{
	{Name: "network_enforcer_learning_coverage_gaps", Kind: instruments.Counter, Unit: "{gap}",
		Description: "Gaps in what learning saw, by cause: the data plane's notices of lost events or of a node it could not read, one each, and flow sides whose pod the cache did not know, one a flow."},
	{Name: "network_enforcer_learning_dropped", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Flow sides that teach nothing, by reason."},
	{Name: "network_enforcer_learning_edges", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Flow sides learned as an edge; each distinct edge goes to the writer once a batch."},
	{Name: "network_enforcer_learning_violation_candidates", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Flow sides that a WorkloadNetworkPolicy governs, handed on as violation candidates."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerLearningCoverageGaps        metric.Int64Counter `metric:"network_enforcer_learning_coverage_gaps"`
	NetworkEnforcerLearningDropped             metric.Int64Counter `metric:"network_enforcer_learning_dropped"`
	NetworkEnforcerLearningEdges               metric.Int64Counter `metric:"network_enforcer_learning_edges"`
	NetworkEnforcerLearningViolationCandidates metric.Int64Counter `metric:"network_enforcer_learning_violation_candidates"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
