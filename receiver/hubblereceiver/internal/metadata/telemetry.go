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
	{Name: "network_enforcer_receiver_flows_accepted", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Flows turned into flow records."},
	{Name: "network_enforcer_receiver_flows_dropped", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Input messages not turned into flow records, by reason."},
	{Name: "network_enforcer_receiver_lost_events", Kind: instruments.Counter, Unit: "{flow}",
		Description: "Flows that the data plane reports it lost before sending them."},
	{Name: "network_enforcer_receiver_node_errors", Kind: instruments.Counter, Unit: "{node}",
		Description: "Times that the data plane reported a node it could not read: that node's flows of the time are lost."},
	{Name: "network_enforcer_receiver_nodes", Kind: instruments.Gauge, Unit: "{node}",
		Description: "Nodes whose Hubble server this replica reads now (nodes mode)."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerReceiverFlowsAccepted metric.Int64Counter `metric:"network_enforcer_receiver_flows_accepted"`
	NetworkEnforcerReceiverFlowsDropped  metric.Int64Counter `metric:"network_enforcer_receiver_flows_dropped"`
	NetworkEnforcerReceiverLostEvents    metric.Int64Counter `metric:"network_enforcer_receiver_lost_events"`
	NetworkEnforcerReceiverNodeErrors    metric.Int64Counter `metric:"network_enforcer_receiver_node_errors"`
	NetworkEnforcerReceiverNodes         metric.Int64Gauge   `metric:"network_enforcer_receiver_nodes"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
