package violationprocessor

import (
	"context"

	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor/internal/metadata"
)

// Metric names of the violation processor.
const (
	MetricObserved       = "network_enforcer_violations_observed"
	MetricDismissed      = "network_enforcer_violation_candidates_dismissed"
	MetricUnattributed   = "network_enforcer_violations_unattributed"
	MetricBufferDropped  = "network_enforcer_violation_buffer_dropped"
	MetricStatusWrites   = "network_enforcer_violation_status_writes"
	MetricAcknowledgment = "network_enforcer_violation_acknowledgements"
)

type telemetry struct {
	tb                                                       *metadata.TelemetryBuilder
	observed, dismissed, unattributed, dropped, writes, acks metric.Int64Counter
	base                                                     attribute.KeyValue
	// observedEdges reports the policies' observed edges too.
	observedEdges observed.Instruments
}

func newTelemetry(set processor.Settings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &telemetry{
		tb:       tb,
		observed: tb.NetworkEnforcerViolationsObserved, dismissed: tb.NetworkEnforcerViolationCandidatesDismissed,
		unattributed: tb.NetworkEnforcerViolationsUnattributed, dropped: tb.NetworkEnforcerViolationBufferDropped,
		writes: tb.NetworkEnforcerViolationStatusWrites, acks: tb.NetworkEnforcerViolationAcknowledgements,
		base: attribute.String("processor", set.ID.String()),
		observedEdges: observed.Instruments{
			Tracked:       tb.Observer(tb.NetworkEnforcerObservedEdgesTracked),
			NotTracked:    tb.Observer(tb.NetworkEnforcerObservedEdgesNotTracked),
			Untracked:     tb.Observer(tb.NetworkEnforcerObservedEdgesUntracked),
			BadEstimators: tb.Observer(tb.NetworkEnforcerObservedEstimatorsUnreadable),
		},
	}, nil
}

// shutdown unregisters the observable instruments' callbacks, which would
// otherwise outlive the processor in the collector's meter provider.
func (t *telemetry) shutdown() { t.tb.Shutdown() }

// counts are one batch's counts, recorded at once.
type counts struct {
	observed     map[string]int64
	dismissed    map[string]int64
	unattributed int64
	dropped      int64
}

func (c *counts) observe(action string) {
	if c.observed == nil {
		c.observed = map[string]int64{}
	}
	c.observed[action]++
}

func (c *counts) dismiss(reason string) {
	if c.dismissed == nil {
		c.dismissed = map[string]int64{}
	}
	c.dismissed[reason]++
}

func (t *telemetry) record(ctx context.Context, c *counts) {
	for action, n := range c.observed {
		t.observed.Add(ctx, n, metric.WithAttributes(t.base, attribute.String("action", action)))
	}
	for reason, n := range c.dismissed {
		t.dismissed.Add(ctx, n, metric.WithAttributes(t.base, attribute.String("reason", reason)))
	}
	if c.unattributed > 0 {
		t.unattributed.Add(ctx, c.unattributed, metric.WithAttributes(t.base))
	}
	if c.dropped > 0 {
		t.bufferDropped(ctx, "full", c.dropped)
	}
}

func (t *telemetry) bufferDropped(ctx context.Context, reason string, n int64) {
	if n > 0 {
		t.dropped.Add(ctx, n, metric.WithAttributes(t.base, attribute.String("reason", reason)))
	}
}

func (t *telemetry) statusWrite(ctx context.Context, err error) {
	result := "ok"
	switch {
	case apierrors.IsConflict(err):
		result = "conflict"
	case err != nil:
		result = "error"
	}
	t.writes.Add(ctx, 1, metric.WithAttributes(t.base, attribute.String("result", result)))
}

func (t *telemetry) acknowledged(ctx context.Context, applied, unknown int) {
	if applied > 0 {
		t.acks.Add(ctx, int64(applied), metric.WithAttributes(t.base, attribute.String("result", "applied")))
	}
	if unknown > 0 {
		t.acks.Add(ctx, int64(unknown), metric.WithAttributes(t.base, attribute.String("result", "unknown")))
	}
}
