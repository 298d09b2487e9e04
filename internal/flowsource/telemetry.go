package flowsource

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of the flow receivers.
const (
	MetricFlowsAccepted = "network_enforcer_receiver_flows_accepted"
	MetricFlowsDropped  = "network_enforcer_receiver_flows_dropped"
	MetricLostEvents    = "network_enforcer_receiver_lost_events"
	MetricNodeErrors    = "network_enforcer_receiver_node_errors"
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
	// DropRefusedByPipeline is a record of a batch that the pipeline refused
	// (the memory limiter, a full queue): it is not retried.
	DropRefusedByPipeline DropReason = "refused_by_pipeline"
)

// Telemetry counts what a receiver accepts and drops, as collector metrics.
type Telemetry struct {
	accepted metric.Int64Counter
	dropped  metric.Int64Counter
	lost     metric.Int64Counter
	nodes    metric.Int64Counter
	base     attribute.KeyValue
	// withBase is the attribute option of the counters without a reason, and
	// withReason those of each reason counted so far: building an attribute set
	// on every count would cost more than the count.
	withBase   metric.AddOption
	withReason sync.Map // DropReason -> metric.AddOption
}

// NewTelemetry creates the counters of one receiver instance.
func NewTelemetry(set component.TelemetrySettings, id component.ID) (*Telemetry, error) {
	meter := set.MeterProvider.Meter("github.com/kubewarden/network-enforcer/receiver")
	t := &Telemetry{base: attribute.String("receiver", id.String())}
	t.withBase = metric.WithAttributeSet(attribute.NewSet(t.base))
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
	if t.nodes, err = meter.Int64Counter(MetricNodeErrors,
		metric.WithDescription("Times that the data plane reported a node it could not read: that node's flows of the time are lost."),
		metric.WithUnit("{node}")); err != nil {
		return nil, err
	}
	return t, nil
}

// Accepted counts n emitted records.
func (t *Telemetry) Accepted(ctx context.Context, n int) {
	if n > 0 {
		t.accepted.Add(ctx, int64(n), t.withBase)
	}
}

// Dropped counts one dropped input message.
func (t *Telemetry) Dropped(ctx context.Context, reason DropReason) { t.DroppedN(ctx, reason, 1) }

// DroppedN counts n input messages dropped for one reason.
func (t *Telemetry) DroppedN(ctx context.Context, reason DropReason, n int) {
	if n <= 0 {
		return
	}
	opt, ok := t.withReason.Load(reason)
	if !ok {
		opt, _ = t.withReason.LoadOrStore(reason,
			metric.WithAttributeSet(attribute.NewSet(t.base, attribute.String("reason", string(reason)))))
	}
	t.dropped.Add(ctx, int64(n), opt.(metric.AddOption))
}

// Lost counts n flows that the data plane lost.
func (t *Telemetry) Lost(ctx context.Context, n int64) {
	if n > 0 {
		t.lost.Add(ctx, n, t.withBase)
	}
}

// NodeErrors counts n nodes that the data plane reported it could not read.
func (t *Telemetry) NodeErrors(ctx context.Context, n int) {
	if n > 0 {
		t.nodes.Add(ctx, int64(n), t.withBase)
	}
}
