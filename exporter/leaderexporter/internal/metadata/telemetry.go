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
	{Name: "network_enforcer_leader_exporter_edges_held", Kind: instruments.ObservableGauge, Unit: "{edge}",
		Description: "Distinct learned edges and observations held for the next send."},
	{Name: "network_enforcer_leader_exporter_records_kept", Kind: instruments.ObservableGauge, Unit: "{record}",
		Description: "Log records kept for a next leader: the leader took them and has not said yet that it wrote them."},
	{Name: "network_enforcer_leader_exporter_records_received", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records that the exporter took from the pipeline."},
	{Name: "network_enforcer_leader_exporter_records_sent", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records that the leader accepted from the exporter, after merging."},
	{Name: "network_enforcer_leader_exporter_records_resent", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records sent again to a new leader, which skips what its predecessor wrote."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerLeaderExporterEdgesHeld       metric.Int64ObservableGauge `metric:"network_enforcer_leader_exporter_edges_held"`
	NetworkEnforcerLeaderExporterRecordsKept     metric.Int64ObservableGauge `metric:"network_enforcer_leader_exporter_records_kept"`
	NetworkEnforcerLeaderExporterRecordsReceived metric.Int64Counter         `metric:"network_enforcer_leader_exporter_records_received"`
	NetworkEnforcerLeaderExporterRecordsSent     metric.Int64Counter         `metric:"network_enforcer_leader_exporter_records_sent"`
	NetworkEnforcerLeaderExporterRecordsResent   metric.Int64Counter         `metric:"network_enforcer_leader_exporter_records_resent"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
