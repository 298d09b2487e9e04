package learningprocessor

import (
	"context"

	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"

	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

// Metric names of the learning processor.
const (
	MetricEdges      = "network_enforcer_learning_edges"
	MetricCandidates = "network_enforcer_learning_violation_candidates"
	MetricDropped    = "network_enforcer_learning_dropped"
	// MetricCoverageGaps counts what learning may have missed, by cause.
	MetricCoverageGaps = "network_enforcer_learning_coverage_gaps"
)

// Reasons, besides the enforcer's reasons for an end without a workload
// (prefixed target_ or peer_), that a flow side teaches nothing.
const (
	reasonNotAllowed = "not_allowed"
	reasonNoPort     = "no_port"
	reasonNoIdentity = "peer_no_identity"
)

type telemetry struct {
	edges, candidates, dropped, gaps metric.Int64Counter
	base                             attribute.KeyValue
}

func newTelemetry(set processor.Settings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &telemetry{edges: tb.NetworkEnforcerLearningEdges, candidates: tb.NetworkEnforcerLearningViolationCandidates,
		dropped: tb.NetworkEnforcerLearningDropped, gaps: tb.NetworkEnforcerLearningCoverageGaps, base: attribute.String("processor", set.ID.String())}, nil
}

// counts are one batch's counts, recorded at once.
type counts struct {
	edges, candidates int64
	dropped           map[string]int64
	// gaps are the coverage gaps, by cause.
	gaps map[v1alpha1.CoverageGapCause]int64
}

func (c *counts) gap(cause v1alpha1.CoverageGapCause, n int64) {
	if c.gaps == nil {
		c.gaps = map[v1alpha1.CoverageGapCause]int64{}
	}
	c.gaps[cause] += n
}

func (c *counts) drop(reason string) {
	if c.dropped == nil {
		c.dropped = map[string]int64{}
	}
	c.dropped[reason]++
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	if c.edges > 0 {
		t.edges.Add(ctx, c.edges, metric.WithAttributes(t.base))
	}
	if c.candidates > 0 {
		t.candidates.Add(ctx, c.candidates, metric.WithAttributes(t.base))
	}
	for reason, n := range c.dropped {
		t.dropped.Add(ctx, n, metric.WithAttributes(t.base, attribute.String("reason", reason)))
	}
	for cause, n := range c.gaps {
		t.gaps.Add(ctx, n, metric.WithAttributes(t.base, attribute.String("cause", string(cause))))
	}
}
