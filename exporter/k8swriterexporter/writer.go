package k8swriterexporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

// writeInterval is how often the leader writes what changed: the edges of a burst
// of new flows go out together, one write per proposal, and a write that failed
// (the API server unreachable) is tried again on the next round.
const writeInterval = time.Second

// writer is the exporter: it aggregates learned edges in memory and, while this
// replica leads, writes the proposals whose content changed.
type writer struct {
	cfg       *Config
	set       exporter.Settings
	enforcer  enforcerextension.Enforcer
	agg       *aggregate
	limiter   *rate.Limiter
	telemetry *telemetry
}

func newWriter(set exporter.Settings, cfg *Config) (*writer, error) {
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, err
	}
	return &writer{
		cfg: cfg, set: set, agg: newAggregate(), telemetry: tel,
		limiter: rate.NewLimiter(rate.Limit(cfg.WriteQPS), cfg.WriteBurst),
	}, nil
}

// Start finds the enforcer and writes whenever this replica leads.
func (w *writer) Start(_ context.Context, host component.Host) error {
	e, err := enforcerextension.Find(host, w.cfg.Enforcer)
	if err != nil {
		return err
	}
	w.enforcer = e
	e.OnLeading(w.lead)
	return nil
}

// Shutdown has nothing to release: the leadership context ends the writes.
func (w *writer) Shutdown(context.Context) error { return nil }

// Capabilities reports that the writer does not change the records it reads.
func (w *writer) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs takes learned edges; other records are not the writer's.
func (w *writer) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	var e learning.Edge
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		if e.ReadFrom(lr) {
			w.agg.add(&e)
		}
	})
	return nil
}

// lead writes while ctx, this term of leadership, lasts. A new leader checks
// every proposal it knows of, since the previous one may have stopped mid-way.
func (w *writer) lead(ctx context.Context) {
	w.agg.markAllDirty()
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			w.writeDirty(ctx)
		}
	}
}

func (w *writer) writeDirty(ctx context.Context) {
	for key, l := range w.agg.takeDirty() {
		if ctx.Err() != nil {
			w.agg.markDirty(key)
			continue
		}
		err := w.reconcile(ctx, key, l)
		switch {
		case err == nil:
		case errors.Is(err, errWorkloadGone):
			w.agg.forget(key)
		default:
			w.agg.markDirty(key)
			if ctx.Err() == nil {
				w.set.Logger.Warn("Could not write a proposal; retrying",
					zap.String("proposal", fmt.Sprintf("%s/%s", key.workload.Namespace, ProposalName(key.workload, key.direction))),
					zap.Error(err))
			}
		}
	}
}
