package enforcerextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MetricReconciles counts the controllers' reconciles by controller and result:
// an error (the API server refused or failed a write) is retried with backoff,
// and shows here as well as on the object.
const MetricReconciles = "network_enforcer_controller_reconciles"

type telemetry struct {
	reconciles metric.Int64Counter
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/extension/enforcerextension")
	r, err := m.Int64Counter(MetricReconciles, metric.WithUnit("{reconcile}"),
		metric.WithDescription("Reconciles of the enforcer's controllers (promotion, render, policy-status, proposal-writer), by result (ok, error)."))
	if err != nil {
		return nil, err
	}
	return &telemetry{reconciles: r}, nil
}

func (t *telemetry) reconciled(ctx context.Context, controller string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.reconciles.Add(ctx, 1, metric.WithAttributes(attribute.String("controller", controller), attribute.String("result", result)))
}
