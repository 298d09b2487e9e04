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
	{Name: "network_enforcer_leader_changes_observed", Kind: instruments.Counter, Unit: "{change}",
		Description: "Changes of the lease holder that this replica observed, its own included."},
	{Name: "network_enforcer_leader_terms", Kind: instruments.Counter, Unit: "{term}",
		Description: "Terms of leadership that this replica began."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerLeaderChangesObserved metric.Int64Counter `metric:"network_enforcer_leader_changes_observed"`
	NetworkEnforcerLeaderTerms           metric.Int64Counter `metric:"network_enforcer_leader_terms"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
