package leaderexporter

import (
	"context"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
)

// MetricRecordsReceived counts the log records that the exporter took from
// the pipeline; MetricRecordsSent those that the leader accepted, after
// merging. Their ratio, against the flows read, is what merging saves.
const (
	MetricRecordsReceived = "network_enforcer_leader_exporter_records_received"
	MetricRecordsSent     = "network_enforcer_leader_exporter_records_sent"
	// MetricRecordsResent counts the records sent again to a new leader.
	MetricRecordsResent = "network_enforcer_leader_exporter_records_resent"
	// MetricRecordsKept is the records kept for a next leader: taken by the
	// leader, not yet written by it.
	MetricRecordsKept = "network_enforcer_leader_exporter_records_kept"
)

type telemetry struct {
	tb       *metadata.TelemetryBuilder
	received metric.Int64Counter
	sent     metric.Int64Counter
	resent   metric.Int64Counter
	attrs    metric.MeasurementOption
}

// newTelemetry makes the exporter's instruments: held gives the edges held
// for the next send, kept the records kept for a next leader.
func newTelemetry(set exporter.Settings, held func() int, kept func() int64) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("exporter", set.ID.String())))
	if err := tb.Observe(tb.NetworkEnforcerLeaderExporterEdgesHeld, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(held()), attrs)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := tb.Observe(tb.NetworkEnforcerLeaderExporterRecordsKept, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(kept(), attrs)
		return nil
	}); err != nil {
		return nil, err
	}
	return &telemetry{
		tb: tb, attrs: attrs,
		received: tb.NetworkEnforcerLeaderExporterRecordsReceived,
		sent:     tb.NetworkEnforcerLeaderExporterRecordsSent,
		resent:   tb.NetworkEnforcerLeaderExporterRecordsResent,
	}, nil
}

// shutdown removes the callbacks of the gauges.
func (t *telemetry) shutdown() { t.tb.Shutdown() }
