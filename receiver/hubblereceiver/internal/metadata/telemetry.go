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
	NetworkEnforcerReceiverFlowsAccepted metric.Int64Counter
	NetworkEnforcerReceiverFlowsDropped  metric.Int64Counter
	NetworkEnforcerReceiverLostEvents    metric.Int64Counter
	NetworkEnforcerReceiverNodeErrors    metric.Int64Counter
	NetworkEnforcerReceiverNodes         metric.Int64Gauge
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerReceiverFlowsAccepted, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_flows_accepted",
		metric.WithDescription("Flows turned into flow records."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverFlowsDropped, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_flows_dropped",
		metric.WithDescription("Input messages not turned into flow records, by reason."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverLostEvents, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_lost_events",
		metric.WithDescription("Flows that the data plane reports it lost before sending them."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverNodeErrors, err = builder.meter.Int64Counter(
		"network_enforcer_receiver_node_errors",
		metric.WithDescription("Times that the data plane reported a node it could not read: that node's flows of the time are lost."),
		metric.WithUnit("{node}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerReceiverNodes, err = builder.meter.Int64Gauge(
		"network_enforcer_receiver_nodes",
		metric.WithDescription("Nodes whose Hubble server this replica reads now (nodes mode)."),
		metric.WithUnit("{node}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
