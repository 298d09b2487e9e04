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
	{Name: "network_enforcer_leader_receiver_records_accepted", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records that the leader took from the readers: handed to the pipeline, or a source's progress noted."},
	{Name: "network_enforcer_leader_receiver_records_dropped", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records dropped by reason (duplicate: a violation candidate accepted within duplicate_window; malformed_progress: a source's progress record without a key or a time)."},
	{Name: "network_enforcer_leader_receiver_records_refused", Kind: instruments.Counter, Unit: "{record}",
		Description: "Log records refused because this replica is not the leader: the sender retries."},
}

// TelemetryBuilder holds the component's instruments, one field for each of
// Metrics; Shutdown removes the callbacks registered with Observe.
type TelemetryBuilder struct {
	instruments.Set
	NetworkEnforcerLeaderReceiverRecordsAccepted metric.Int64Counter `metric:"network_enforcer_leader_receiver_records_accepted"`
	NetworkEnforcerLeaderReceiverRecordsDropped  metric.Int64Counter `metric:"network_enforcer_leader_receiver_records_dropped"`
	NetworkEnforcerLeaderReceiverRecordsRefused  metric.Int64Counter `metric:"network_enforcer_leader_receiver_records_refused"`
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	var b TelemetryBuilder
	return &b, instruments.Build(Meter(settings), Metrics, &b)
}
