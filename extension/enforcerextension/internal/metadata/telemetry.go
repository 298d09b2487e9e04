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
	{Name: "network_enforcer_controller_reconciles", Kind: instruments.Counter, Unit: "{reconcile}",
		Description: "Reconciles of the controllers that run on the enforcer's cache and client (the writers' proposal-writer and policy-status, the policy controller's promotion, revision and render), by result (ok, error)."},
	{Name: "network_enforcer_members", Kind: instruments.Gauge, Unit: "{member}",
		Description: "Live members that share the flow sources' keys, as this replica sees them, itself included."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerControllerReconciles metric.Int64Counter `metric:"network_enforcer_controller_reconciles"`
	NetworkEnforcerMembers              metric.Int64Gauge   `metric:"network_enforcer_members"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
