package policydeniesconnector

import (
	"context"

	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MetricDropped counts the observations that max_series kept out of
// network_enforcer_policy_denies.
const MetricDropped = "network_enforcer_policy_denies_dropped"

type telemetry struct {
	dropped metric.Int64Counter
	base    attribute.KeyValue
}

func newTelemetry(set connector.Settings) (*telemetry, error) {
	m := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/connector/policydeniesconnector")
	d, err := m.Int64Counter(MetricDropped, metric.WithUnit("{violation}"),
		metric.WithDescription("Violation observations not counted because they would start a series beyond max_series."))
	if err != nil {
		return nil, err
	}
	return &telemetry{dropped: d, base: attribute.String("connector", set.ID.String())}, nil
}

func (t *telemetry) drop(ctx context.Context, n int64) {
	if n > 0 {
		t.dropped.Add(ctx, n, metric.WithAttributes(t.base))
	}
}
