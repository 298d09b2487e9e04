package policydeniesconnector

import (
	"context"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/connector/policydeniesconnector/internal/metadata"
)

// MetricDropped counts the observations that max_series kept out of
// network_enforcer_policy_denies. The name is for the code that reads it;
// internal/metadata creates the meter.
const MetricDropped = "network_enforcer_policy_denies_dropped"

type telemetry struct {
	dropped metric.Int64Counter
	base    attribute.KeyValue
}

func newTelemetry(set connector.Settings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &telemetry{dropped: tb.NetworkEnforcerPolicyDeniesDropped, base: attribute.String("connector", set.ID.String())}, nil
}

func (t *telemetry) drop(ctx context.Context, n int64) {
	if n > 0 {
		t.dropped.Add(ctx, n, metric.WithAttributes(t.base))
	}
}
