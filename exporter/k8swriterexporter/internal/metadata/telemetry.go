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
	{Name: "network_enforcer_writer_api_writes", Kind: instruments.Counter, Unit: "{write}",
		Description: "Writes to the Kubernetes API, by operation (create, update, status) and result (ok, refused, error)."},
	{Name: "network_enforcer_writer_records_counted_already", Kind: instruments.Counter, Unit: "{record}",
		Description: "Observed records skipped because the proposal's counts include their batch already: a reader sent it again, to a new leader or after a lost answer."},
	{Name: "network_enforcer_writer_unwritten_proposals", Kind: instruments.ObservableGauge, Unit: "{proposal}",
		Description: "Proposals that learned something whose write has not finished yet."},
}, observed.Metrics...)

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	observed.Fields
	NetworkEnforcerWriterAPIWrites             metric.Int64Counter         `metric:"network_enforcer_writer_api_writes"`
	NetworkEnforcerWriterRecordsCountedAlready metric.Int64Counter         `metric:"network_enforcer_writer_records_counted_already"`
	NetworkEnforcerWriterUnwrittenProposals    metric.Int64ObservableGauge `metric:"network_enforcer_writer_unwritten_proposals"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
