package k8swriterexporter

import (
	"context"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
	"github.com/kubewarden/network-enforcer/internal/observed"
)

// MetricWrites counts the writer's API writes by operation and result.
const MetricWrites = "network_enforcer_writer_api_writes"

// MetricUnwritten is how many proposals have learned something whose write has
// not finished yet; it returns to 0 when the writer has caught up.
const MetricUnwritten = "network_enforcer_writer_unwritten_proposals"

type telemetry struct {
	tb            *metadata.TelemetryBuilder
	writes, again metric.Int64Counter
	base          attribute.KeyValue
}

func newTelemetry(set exporter.Settings, unwritten func() int, store *observed.Store) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	base := attribute.String("exporter", set.ID.String())
	if err := tb.Observe(tb.NetworkEnforcerWriterUnwrittenProposals, func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(int64(unwritten()), metric.WithAttributes(base))
		return nil
	}); err != nil {
		return nil, err
	}
	if err := store.RegisterMetrics(observed.Instruments{
		Tracked:       tb.Observer(tb.NetworkEnforcerObservedEdgesTracked),
		NotTracked:    tb.Observer(tb.NetworkEnforcerObservedEdgesNotTracked),
		Untracked:     tb.Observer(tb.NetworkEnforcerObservedEdgesUntracked),
		BadEstimators: tb.Observer(tb.NetworkEnforcerObservedEstimatorsUnreadable),
	}, base); err != nil {
		return nil, err
	}
	return &telemetry{tb: tb, writes: tb.NetworkEnforcerWriterAPIWrites, again: tb.NetworkEnforcerWriterRecordsCountedAlready, base: base}, nil
}

// shutdown unregisters the observable instruments' callbacks: the meter
// provider outlives the component, and a callback left behind would keep
// reporting (and holding) a writer that has stopped.
func (t *telemetry) shutdown() { t.tb.Shutdown() }

func (t *telemetry) wrote(ctx context.Context, op string, err error) {
	result := "ok"
	switch {
	case apiwrite.IsRefused(err):
		result = "refused"
	case err != nil:
		result = "error"
	}
	t.writes.Add(ctx, 1, metric.WithAttributes(t.base, attribute.String("operation", op), attribute.String("result", result)))
}

// skippedAgain counts observed records of a batch that the counts include.
func (t *telemetry) skippedAgain(ctx context.Context, n int) {
	t.again.Add(ctx, int64(n), metric.WithAttributes(t.base))
}
