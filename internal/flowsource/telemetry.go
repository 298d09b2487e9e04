package flowsource

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metric names of the flow receivers' shared counters. Each receiver's
// internal/metadata creates them in its own scope; these names are for the
// code that reads them (load tests, dashboards).
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

// Counters are a receiver's instruments for the shared counts, created by its
// telemetry builder. A receiver whose data plane reports no lost flows or
// unreadable nodes leaves Lost and NodeErrors nil.
type Counters struct {
	Accepted, Dropped, Lost, NodeErrors metric.Int64Counter
}

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

// NewTelemetry counts on c for the receiver id.
func NewTelemetry(id component.ID, c Counters) *Telemetry {
	t := &Telemetry{accepted: c.Accepted, dropped: c.Dropped, lost: orNoop(c.Lost), nodes: orNoop(c.NodeErrors),
		base: attribute.String("receiver", id.String())}
	t.withBase = metric.WithAttributeSet(attribute.NewSet(t.base))
	return t
}

func orNoop(c metric.Int64Counter) metric.Int64Counter {
	if c == nil {
		return noop.Int64Counter{}
	}
	return c
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
