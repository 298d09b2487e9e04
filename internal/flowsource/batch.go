package flowsource

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
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
// fill; a timer sends a batch that lingered.
type batcher struct {
	cfg    BatchConfig
	next   consumer.Logs
	tel    *Telemetry
	logger *zap.Logger

	mu      sync.Mutex
	logs    plog.Logs
	records plog.LogRecordSlice
	n       int
	started time.Time
	timer   *time.Timer

	// sending orders the hand-offs: a batch is sent after the one before it.
	sending sync.Mutex
}

func newBatcher(cfg BatchConfig, next consumer.Logs, tel *Telemetry, logger *zap.Logger) *batcher {
	b := &batcher{cfg: cfg, next: next, tel: tel, logger: logger}
	b.timer = time.AfterFunc(time.Hour, b.linger)
	b.timer.Stop()
	return b
}

// add puts rec into the open batch, and sends the batch when it is full.
func (b *batcher) add(rec *flow.Record) {
	b.mu.Lock()
	if b.n == 0 {
		b.logs = plog.NewLogs()
		b.records = b.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		b.records.EnsureCapacity(min(b.cfg.MaxSize, DefaultBatchSize))
		b.started = time.Now()
		b.timer.Reset(b.cfg.Timeout)
	}
	rec.WriteTo(b.records.AppendEmpty())
	b.n++
	if b.n < b.cfg.MaxSize {
		b.mu.Unlock()
		return
	}
	b.timer.Stop()
	b.sendLocked()
}

// linger sends the open batch when its first record has waited long enough.
func (b *batcher) linger() {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return
	}
	// The timer may belong to a batch already sent full: this one is younger.
	if wait := b.cfg.Timeout - time.Since(b.started); wait > 0 {
		b.timer.Reset(wait)
		b.mu.Unlock()
		return
	}
	b.sendLocked()
}

// flush sends the open batch, if any, and returns once it is in the pipeline.
func (b *batcher) flush() {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return
	}
	b.timer.Stop()
	b.sendLocked()
}

// sendLocked takes the open batch and hands it to the pipeline. It is called
// with mu held and releases it once the batch is taken, so that the stream can
// fill the next batch while the timer's batch is in the pipeline.
func (b *batcher) sendLocked() {
	logs, n := b.logs, b.n
	b.logs, b.records, b.n = plog.Logs{}, plog.LogRecordSlice{}, 0
	b.sending.Lock()
	b.mu.Unlock()
	defer b.sending.Unlock()
	// The batch outlives the stream that filled it: a stopped stream's last
	// records still go out, so they are not sent with its context.
	ctx := context.Background()
	if err := b.next.ConsumeLogs(ctx, logs); err != nil {
		b.logger.Error("the pipeline refused a batch of flow records", zap.Int("records", n), zap.Error(err))
		return
	}
	b.tel.Accepted(ctx, n)
}

// stop sends what is open and stops the timer.
func (b *batcher) stop() {
	b.flush()
	b.timer.Stop()
}
