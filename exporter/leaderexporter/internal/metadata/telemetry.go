package metadata

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/internal/callbacks"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the component's instruments, created as
// metadata.yaml lists them.
type TelemetryBuilder struct {
	meter metric.Meter
	// Registrations keeps the callbacks, which Shutdown removes.
	callbacks.Registrations
	NetworkEnforcerLeaderExporterEdgesHeld       metric.Int64ObservableGauge
	NetworkEnforcerLeaderExporterRecordsReceived metric.Int64Counter
	NetworkEnforcerLeaderExporterRecordsSent     metric.Int64Counter
	NetworkEnforcerLeaderExporterRecordsResent   metric.Int64Counter
}

// RegisterNetworkEnforcerLeaderExporterEdgesHeldCallback sets the callback that observes NetworkEnforcerLeaderExporterEdgesHeld.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerLeaderExporterEdgesHeldCallback(cb metric.Int64Callback) error {
	return builder.RegisterInt64(builder.meter, builder.NetworkEnforcerLeaderExporterEdgesHeld, cb)
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerLeaderExporterEdgesHeld, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_leader_exporter_edges_held",
		metric.WithDescription("Distinct learned edges and observations held for the next send."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderExporterRecordsReceived, err = builder.meter.Int64Counter(
		"network_enforcer_leader_exporter_records_received",
		metric.WithDescription("Log records that the exporter took from the pipeline."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderExporterRecordsSent, err = builder.meter.Int64Counter(
		"network_enforcer_leader_exporter_records_sent",
		metric.WithDescription("Log records that the leader accepted from the exporter, after merging."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerLeaderExporterRecordsResent, err = builder.meter.Int64Counter(
		"network_enforcer_leader_exporter_records_resent",
		metric.WithDescription("Log records sent again to a new leader, which skips what its predecessor wrote."),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
