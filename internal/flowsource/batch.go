package flowsource

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/internal/flow"
)

// BatchConfig is how a flow receiver groups records before handing them to the
// pipeline. A batch goes out when it holds MaxSize records or when its first
// record has waited Timeout, whichever comes first, and when the stream ends.
// The processors remember their answers for one batch (the workloads of the
// ends, the policies of a target), so a batch of many flows costs them little
// more than one flow.
type BatchConfig struct {
	// MaxSize is the most records in one batch.
	MaxSize int `mapstructure:"max_size"`
	// Timeout is the longest a record waits for its batch to fill.
	Timeout time.Duration `mapstructure:"timeout"`
}

// Batch defaults: a busy stream fills batches of DefaultBatchSize, a quiet one
// hands each record on within DefaultBatchTimeout.
const (
	DefaultBatchSize    = 1024
	DefaultBatchTimeout = 5 * time.Millisecond
	// maxBatchTimeout bounds the linger: a flow's violation event must go out
	// promptly.
	maxBatchTimeout = time.Second
)

// NewDefaultBatchConfig returns the defaults.
func NewDefaultBatchConfig() BatchConfig {
	return BatchConfig{MaxSize: DefaultBatchSize, Timeout: DefaultBatchTimeout}
}

// Check returns what is wrong with the settings, each error naming its key
// under key: a positive size, and a timeout that is positive and short. A
// receiver's Validate reports them with its own.
func (c BatchConfig) Check(key string) []error {
	var errs []error
	if c.MaxSize < 1 {
		errs = append(errs, fmt.Errorf("invalid %s::max_size %d: must be at least 1", key, c.MaxSize))
	}
	if c.Timeout <= 0 || c.Timeout > maxBatchTimeout {
		errs = append(errs, fmt.Errorf("invalid %s::timeout %s: must be positive and at most %s", key, c.Timeout, maxBatchTimeout))
	}
	return errs
}

// batcher collects records into batches and hands each batch to the pipeline,
// in order. The stream's goroutine adds records and sends the batches that
// fill; a timer sends a batch that lingered. A goroutine of its own writes each
// batch as log records, and another hands the written batches to the
// pipeline, so that the stream reads and converts the next batch meanwhile:
// one batch is in the pipeline, one is written, and the stream fills a third.
type batcher struct {
	cfg    BatchConfig
	next   consumer.Logs
	tel    *Telemetry
	op     operation
	logger *zap.Logger

	mu      sync.Mutex
	records []flow.Record
	marks   []Mark
	// gaps are the gaps that the data plane reported meanwhile: rare, they
	// go with the batch, after its records.
	gaps    []flow.Gap
	started time.Time
	timer   *time.Timer

	// accepted, when set, learns the marks of each batch that the pipeline
	// took.
	accepted func([]Mark)

	// sending orders the hand-offs to the delivery goroutine: a batch is
	// queued after the one before it.
	sending sync.Mutex
	queue   chan delivery
	closed  bool // the queue; under sending
	// free holds the slices of delivered batches, for the next ones.
	free    chan []flow.Record
	once    sync.Once
	stopped chan struct{}
}

// operation is how a receiver reports each batch to the collector's standard
// receiver telemetry: the ObsReport of its transport and the format of what
// it receives.
type operation struct {
	obs    *receiverhelper.ObsReport
	format string
}

// delivery is a batch on its way to the pipeline; done, when not nil, is closed
// once the pipeline has it.
type delivery struct {
	records []flow.Record
	marks   []Mark
	gaps    []flow.Gap
	done    chan struct{}
}

// Mark is how far a batch reaches in the input of one key (a stream among
// several, such as a Cilium node's): once the batch is in the pipeline,
// everything that key's input gave up to Time is.
type Mark struct {
	Key  string
	Time time.Time
}

func newBatcher(cfg BatchConfig, next consumer.Logs, tel *Telemetry, op operation, logger *zap.Logger) *batcher {
	b := &batcher{cfg: cfg, next: next, tel: tel, op: op, logger: logger,
		queue: make(chan delivery, 1), free: make(chan []flow.Record, 3), stopped: make(chan struct{})}
	b.timer = time.AfterFunc(time.Hour, b.linger)
	b.timer.Stop()
	return b
}

// add puts rec into the open batch, and sends the batch when it is full.
func (b *batcher) add(rec *flow.Record) {
	b.mu.Lock()
	b.openLocked()
	b.records = append(b.records, *rec)
	b.sendFullLocked()
}

// addMarked is add for a record of key's input at t, or, with rec nil, an
// input of key at t that gave no record: the batch then carries key's mark.
func (b *batcher) addMarked(rec *flow.Record, key string, t time.Time) {
	b.mu.Lock()
	b.openLocked()
	if n := len(b.marks); n > 0 && b.marks[n-1].Key == key {
		b.marks[n-1].Time = later(b.marks[n-1].Time, t)
	} else if i := slices.IndexFunc(b.marks, func(m Mark) bool { return m.Key == key }); i >= 0 {
		b.marks[i].Time = later(b.marks[i].Time, t)
	} else {
		b.marks = append(b.marks, Mark{Key: key, Time: t})
	}
	if rec != nil {
		b.records = append(b.records, *rec)
	}
	b.sendFullLocked()
}

// addGap puts a gap into the open batch.
func (b *batcher) addGap(g *flow.Gap) {
	b.mu.Lock()
	b.openLocked()
	b.gaps = append(b.gaps, *g)
	b.sendFullLocked()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// openLocked opens a batch, and starts its linger, when none is open.
func (b *batcher) openLocked() {
	if !b.emptyLocked() {
		return
	}
	if b.records == nil {
		select {
		case b.records = <-b.free:
		default:
			b.records = make([]flow.Record, 0, min(b.cfg.MaxSize, DefaultBatchSize))
		}
	}
	b.started = time.Now()
	b.timer.Reset(b.cfg.Timeout)
}

// sendFullLocked sends the open batch when it is full, and releases mu.
func (b *batcher) sendFullLocked() {
	if len(b.records) < b.cfg.MaxSize {
		b.mu.Unlock()
		return
	}
	b.timer.Stop()
	b.sendLocked(nil)
}

// linger sends the open batch when its first record has waited long enough.
func (b *batcher) linger() {
	b.mu.Lock()
	if b.emptyLocked() {
		b.mu.Unlock()
		return
	}
	// The timer may belong to a batch already sent full: this one is younger.
	if wait := b.cfg.Timeout - time.Since(b.started); wait > 0 {
		b.timer.Reset(wait)
		b.mu.Unlock()
		return
	}
	b.sendLocked(nil)
}

// flush sends the open batch, if any, and returns once every batch sent is in
// the pipeline.
func (b *batcher) flush() {
	b.mu.Lock()
	b.timer.Stop()
	done := make(chan struct{})
	b.sendLocked(done)
	<-done
}

// sendLocked queues the open batch for the pipeline; with done, also when it is
// empty, to learn when the batches before it are in. It is called with mu held
// and releases it once the batch is taken, so that the stream can fill the
// next batch while the timer's batch waits for the pipeline.
func (b *batcher) sendLocked(done chan struct{}) {
	records, marks, gaps := b.records, b.marks, b.gaps
	b.records, b.marks, b.gaps = nil, nil, nil
	b.sending.Lock()
	b.mu.Unlock()
	defer b.sending.Unlock()
	if b.closed || (len(records) == 0 && len(marks) == 0 && len(gaps) == 0 && done == nil) {
		if done != nil {
			close(done) // after stop, nothing is added: there is nothing to wait for
		}
		return
	}
	b.once.Do(func() { go b.deliver() })
	b.queue <- delivery{records: records, marks: marks, gaps: gaps, done: done}
}

// emptyLocked reports whether no batch is open.
func (b *batcher) emptyLocked() bool {
	return len(b.records) == 0 && len(b.marks) == 0 && len(b.gaps) == 0
}

// deliver writes each queued batch as log records, and hands the written
// batches to a goroutine of their own that gives them to the pipeline: writing
// the next batch's attributes, a good part of a flow's cost, goes on while the
// pipeline takes the one before it. The batches keep their order.
func (b *batcher) deliver() {
	written := make(chan writtenBatch, 1)
	go b.consume(written)
	defer close(written)
	for d := range b.queue {
		w := writtenBatch{n: len(d.records), marks: d.marks, done: d.done}
		if w.n > 0 || len(d.gaps) > 0 {
			w.logs = plog.NewLogs()
			sl := w.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
			lrs := sl.LogRecords()
			lrs.EnsureCapacity(w.n + len(d.gaps) + len(d.marks))
			for i := range d.records {
				d.records[i].WriteTo(lrs.AppendEmpty())
			}
			for i := range d.gaps {
				d.gaps[i].AppendTo(sl)
			}
			// The marks close the batch: a leader that takes it knows how far
			// it reaches in each key's input.
			for _, m := range d.marks {
				WriteProgress(lrs.AppendEmpty(), m)
			}
		}
		// The batch's slice serves again, once (it is free of its records
		// now, or held none: a batch of marks or gaps alone).
		if cap(d.records) > 0 {
			clear(d.records)
			select {
			case b.free <- d.records[:0]:
			default:
			}
		}
		written <- w
	}
}

// writtenBatch is a batch written as log records, on its way to the pipeline.
type writtenBatch struct {
	logs  plog.Logs
	n     int
	marks []Mark
	done  chan struct{}
}

// consume hands each written batch to the pipeline, and counts it.
func (b *batcher) consume(written <-chan writtenBatch) {
	defer close(b.stopped)
	for w := range written {
		if w.logs != (plog.Logs{}) {
			// The batch outlives the stream that filled it: a stopped stream's
			// last records still go out, so they are not sent with its context.
			ctx := b.op.obs.StartLogsOp(context.Background())
			err := b.next.ConsumeLogs(ctx, w.logs)
			b.op.obs.EndLogsOp(ctx, b.op.format, w.n, err)
			if err != nil {
				b.logger.Error("the pipeline refused a batch of flow records", zap.Int("records", w.n), zap.Error(err))
				b.tel.DroppedN(ctx, DropRefusedByPipeline, w.n)
				w.marks = nil // not handed on
			} else {
				b.tel.Accepted(ctx, w.n)
			}
		}
		if len(w.marks) > 0 && b.accepted != nil {
			b.accepted(w.marks)
		}
		if w.done != nil {
			close(w.done)
		}
	}
}

// stop sends what is open, waits until it is in the pipeline and ends the
// delivery goroutine.
func (b *batcher) stop() {
	b.flush()
	b.timer.Stop()
	b.sending.Lock()
	defer b.sending.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.queue)
	b.once.Do(func() { close(b.stopped) }) // never started
	<-b.stopped
}
