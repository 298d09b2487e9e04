package flowsource

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of the flow receivers.
const (
	MetricFlowsAccepted = "network_enforcer_receiver_flows_accepted"
	MetricFlowsDropped  = "network_enforcer_receiver_flows_dropped"
	MetricLostEvents    = "network_enforcer_receiver_lost_events"
)

// DropReason says why a receiver did not emit a record for an input message.
type DropReason string

// The drop reasons that every receiver shares; a receiver may add its own.
const (
	DropReply            DropReason = "reply"
	DropNotL4            DropReason = "not_l3_l4"
	DropUnsupportedProto DropReason = "unsupported_protocol"
	DropUnknownEnum      DropReason = "unknown_enum"
	DropMalformed        DropReason = "malformed"
)

// Telemetry counts what a receiver accepts and drops, as collector metrics.
type Telemetry struct {
	accepted metric.Int64Counter
	dropped  metric.Int64Counter
	lost     metric.Int64Counter
	base     attribute.KeyValue
}

// NewTelemetry creates the counters of one receiver instance.
func NewTelemetry(set component.TelemetrySettings, id component.ID) (*Telemetry, error) {
	meter := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/receiver")
	t := &Telemetry{base: attribute.String("receiver", id.String())}
	var err error
	if t.accepted, err = meter.Int64Counter(MetricFlowsAccepted,
		metric.WithDescription("Flows turned into flow records."), metric.WithUnit("{flow}")); err != nil {
		return nil, err
	}
	if t.dropped, err = meter.Int64Counter(MetricFlowsDropped,
		metric.WithDescription("Input messages not turned into flow records, by reason."), metric.WithUnit("{flow}")); err != nil {
		return nil, err
	}
	if t.lost, err = meter.Int64Counter(MetricLostEvents,
		metric.WithDescription("Flows that the data plane reports it lost before sending them."), metric.WithUnit("{flow}")); err != nil {
		return nil, err
	}
	return t, nil
}

// Accepted counts n emitted records.
func (t *Telemetry) Accepted(ctx context.Context, n int) {
	if n > 0 {
		t.accepted.Add(ctx, int64(n), metric.WithAttributes(t.base))
	}
}

// Dropped counts one dropped input message.
func (t *Telemetry) Dropped(ctx context.Context, reason DropReason) {
	t.dropped.Add(ctx, 1, metric.WithAttributes(t.base, attribute.String("reason", string(reason))))
}

// Lost counts n flows that the data plane lost.
func (t *Telemetry) Lost(ctx context.Context, n int64) {
	if n > 0 {
		t.lost.Add(ctx, n, metric.WithAttributes(t.base))
	}
}
