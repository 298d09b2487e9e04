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

// MetricTerms counts the terms of leadership this replica began; a standby's
// stays 0.
const MetricTerms = "network_enforcer_leader_terms"

// MetricLeaderObserved counts the times this replica saw the lease change
// hands (itself or another replica taking it): a standby that has counted one
// has competed for the lease and found it held.
const MetricLeaderObserved = "network_enforcer_leader_changes_observed"

type telemetry struct {
	reconciles metric.Int64Counter
	terms      metric.Int64Counter
	observed   metric.Int64Counter
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/extension/enforcerextension")
	r, err := m.Int64Counter(MetricReconciles, metric.WithUnit("{reconcile}"),
		metric.WithDescription("Reconciles of the enforcer's controllers (promotion, render, policy-status, proposal-writer), by result (ok, error)."))
	if err != nil {
		return nil, err
	}
	terms, err := m.Int64Counter(MetricTerms, metric.WithUnit("{term}"),
		metric.WithDescription("Terms of leadership that this replica began."))
	if err != nil {
		return nil, err
	}
	observed, err := m.Int64Counter(MetricLeaderObserved, metric.WithUnit("{change}"),
		metric.WithDescription("Changes of the lease holder that this replica observed, its own included."))
	if err != nil {
		return nil, err
	}
	return &telemetry{reconciles: r, terms: terms, observed: observed}, nil
}

func (t *telemetry) reconciled(ctx context.Context, controller string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.reconciles.Add(ctx, 1, metric.WithAttributes(attribute.String("controller", controller), attribute.String("result", result)))
}
