package leaderexporter

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
)

// leaderExporter splits what the pipeline hands it: learned edges and
// observations wait in the aggregator for the interval (or until max_edges
// distinct ones are held), everything else goes to inner at once. inner is
// the collector's exporter helper, whose queue and retries send over sender.
type leaderExporter struct {
	set       exporter.Settings
	cfg       *Config
	telemetry *telemetry
	agg       *aggregator
	sender    *sender
	inner     exporter.Logs

	// flushMu serialises flushes, so that the records of one interval are
	// handed on before those of the next.
	flushMu sync.Mutex
	// stop ends the ticker, and a send of the ticker's that waits for the
	// leader; done is closed when the ticker has returned.
	stop context.CancelFunc
	done chan struct{}
}

func newLeaderExporter(set exporter.Settings, cfg *Config) (*leaderExporter, error) {
	e := &leaderExporter{set: set, cfg: cfg, agg: newAggregator()}
	e.sender = newSender(set, cfg)
	tel, err := newTelemetry(set, e.agg.len, e.sender.batches.records.Load)
	if err != nil {
		return nil, err
	}
	e.telemetry = tel
	e.sender.telemetry = tel
	return e, nil
}

func (e *leaderExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start starts the exporter helper (which finds the enforcer extension) and
// the interval's ticker.
func (e *leaderExporter) Start(ctx context.Context, host component.Host) error {
	if err := e.inner.Start(ctx, host); err != nil {
		return err
	}
	var run context.Context
	// Start's context ends with Start; the ticker runs until Shutdown.
	run, e.stop = context.WithCancel(context.Background())
	e.done = make(chan struct{})
	go e.tick(run, e.cfg.Aggregation.Interval)
	return nil
}

// Shutdown stops the ticker, hands on what is held, and shuts the exporter
// helper down, which sends what its queue holds: a graceful stop loses
// nothing that the leader can take.
func (e *leaderExporter) Shutdown(ctx context.Context) error {
	var errs []error
	if e.stop != nil {
		e.stop()
		<-e.done
		e.stop = nil // a second Shutdown has nothing to stop
		errs = append(errs, e.flush(ctx))
	}
	if e.inner != nil {
		errs = append(errs, e.inner.Shutdown(ctx))
	}
	e.telemetry.shutdown()
	return errors.Join(errs...)
}

func (e *leaderExporter) tick(ctx context.Context, interval time.Duration) {
	defer close(e.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := e.flush(ctx); err != nil {
				e.set.Logger.Warn("Could not hand the merged edges to the sending queue", zap.Error(err))
			}
			e.sendKept(ctx)
		}
	}
}

// sendKept sends the kept batches to a new leader, within the send timeout.
func (e *leaderExporter) sendKept(ctx context.Context) {
	if e.cfg.TimeoutConfig.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.cfg.TimeoutConfig.Timeout)
		defer cancel()
	}
	if err := e.sender.sendKept(ctx); err != nil {
		e.set.Logger.Debug("Could not send the kept batches to a new leader yet", zap.Error(err))
	}
}

// flush hands what the aggregator holds to the exporter helper.
func (e *leaderExporter) flush(ctx context.Context) error {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	ld, ok := e.agg.take()
	if !ok {
		return nil
	}
	return e.inner.ConsumeLogs(ctx, ld)
}

// ConsumeLogs merges the batch's learned edges and observations into what is
// held and sends the rest at once. A batch without any is handed on as it is.
func (e *leaderExporter) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	e.telemetry.received.Add(ctx, int64(ld.LogRecordCount()), e.telemetry.attrs)
	if !hasMergeable(ld) {
		return e.inner.ConsumeLogs(ctx, ld)
	}
	full := e.agg.addBatch(ld, e.cfg.Aggregation.MaxEdges)
	var err error
	if now := others(ld); now.LogRecordCount() > 0 {
		err = e.inner.ConsumeLogs(ctx, now)
	}
	for _, held := range full {
		// An error is logged, not returned: the batch's edges were taken,
		// and a retry of the batch would count them twice. The exporter
		// helper counts what it could not take.
		if err := e.send(ctx, held); err != nil {
			e.set.Logger.Warn("Could not hand the merged edges to the sending queue", zap.Error(err))
		}
	}
	return err
}

// send hands on held records that max_edges took.
func (e *leaderExporter) send(ctx context.Context, held plog.Logs) error {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	return e.inner.ConsumeLogs(ctx, held)
}

// others copies the records of ld that are not merged, under their resource
// and scope.
func others(ld plog.Logs) plog.Logs {
	now := plog.NewLogs()
	for _, rl := range ld.ResourceLogs().All() {
		var nowRL plog.ResourceLogs
		hasRL := false
		for _, sl := range rl.ScopeLogs().All() {
			var nowSL plog.ScopeLogs
			hasSL := false
			for _, lr := range sl.LogRecords().All() {
				if mergeable(lr) {
					continue
				}
				if !hasSL {
					if !hasRL {
						hasRL = true
						nowRL = now.ResourceLogs().AppendEmpty()
						rl.Resource().CopyTo(nowRL.Resource())
						nowRL.SetSchemaUrl(rl.SchemaUrl())
					}
					hasSL = true
					nowSL = nowRL.ScopeLogs().AppendEmpty()
					sl.Scope().CopyTo(nowSL.Scope())
					nowSL.SetSchemaUrl(sl.SchemaUrl())
				}
				lr.CopyTo(nowSL.LogRecords().AppendEmpty())
			}
		}
	}
	return now
}

func hasMergeable(ld plog.Logs) bool { return anyRecord(ld, mergeable) }
