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
	{Name: "network_enforcer_receiver_join_evictions", Kind: instruments.Counter, Unit: "{line}",
		Description: "Lines that left the join before the join window because it held its maximum: a held denial or decision went out unjoined, an allowed line was no longer joinable."},
	{Name: "network_enforcer_receiver_refused_standby", Kind: instruments.Counter, Unit: "{record}",
		Description: "OTLP log records that this standby replica refused, for the sender to retry with the leader."},
	{Name: "network_enforcer_receiver_unjoined_decisions", Kind: instruments.Counter, Unit: "{decision}",
		Description: "Policy decisions that no access line joined within the join window; their destination port is 0."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerReceiverFlowsAccepted     metric.Int64Counter `metric:"network_enforcer_receiver_flows_accepted"`
	NetworkEnforcerReceiverFlowsDropped      metric.Int64Counter `metric:"network_enforcer_receiver_flows_dropped"`
	NetworkEnforcerReceiverJoinEvictions     metric.Int64Counter `metric:"network_enforcer_receiver_join_evictions"`
	NetworkEnforcerReceiverRefusedStandby    metric.Int64Counter `metric:"network_enforcer_receiver_refused_standby"`
	NetworkEnforcerReceiverUnjoinedDecisions metric.Int64Counter `metric:"network_enforcer_receiver_unjoined_decisions"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
