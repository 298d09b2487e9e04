package enforcerextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/internal/metadata"
)

// MetricReconciles counts the controllers' reconciles by controller and result:
// an error (the API server refused or failed a write) is retried with backoff,
// and shows here as well as on the object.
const MetricReconciles = "network_enforcer_controller_reconciles"

// MetricMembers is the number of live members that share the flow sources'
// keys, as this replica sees them, itself included; recorded from the start
// of the membership, which the first flow source that asks for it starts.
const MetricMembers = "network_enforcer_members"

type telemetry struct {
	reconciles metric.Int64Counter
	members    metric.Int64Gauge
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &telemetry{reconciles: tb.NetworkEnforcerControllerReconciles, members: tb.NetworkEnforcerMembers}, nil
}

func (t *telemetry) reconciled(ctx context.Context, controller string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	t.reconciles.Add(ctx, 1, metric.WithAttributes(attribute.String("controller", controller), attribute.String("result", result)))
}

// recordMembers records the number of live members (membership.MembersGauge).
func (t *telemetry) recordMembers(live int) {
	t.members.Record(context.Background(), int64(live))
}
