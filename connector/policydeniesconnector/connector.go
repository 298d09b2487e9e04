package policydeniesconnector

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// EventName is the event name of a violation observation, the only log records
// the connector counts.
const EventName = violationevent.Observed

// The metric the connector emits.
const (
	MetricDenies      = "network_enforcer_policy_denies"
	metricUnit        = "{violation}"
	metricDescription = "Violation observations by provider, action, transport, source and destination workload, destination port and policy."
)

// scopeName is the instrumentation scope of the emitted metric.
const scopeName = "github.com/kubewarden/network-enforcer/connector/policydeniesconnector"

// labelKeys are the attributes of a series, in the order of a seriesKey: each is
// copied from the event's log attribute of the same key, as a string (an integer
// port as its decimal digits), and is empty when the event lacks it.
var labelKeys = [...]string{
	violationevent.AttrProvider,
	violationevent.AttrAction,
	violationevent.AttrTransport,
	violationevent.AttrSourceNamespace,
	violationevent.AttrSourceName,
	violationevent.AttrDestinationNamespace,
	violationevent.AttrDestinationName,
	violationevent.AttrDestinationPort,
	violationevent.AttrPolicyNamespace,
	violationevent.AttrPolicyName,
}

// seriesKey is the label set of one series, as the values of labelKeys.
type seriesKey [len(labelKeys)]string

func keyOf(lr plog.LogRecord) seriesKey {
	var k seriesKey
	attrs := lr.Attributes()
	for i, name := range labelKeys {
		if v, ok := attrs.Get(name); ok {
			k[i] = v.AsString()
		}
	}
	return k
}

// series is the cumulative count of one label set.
type series struct {
	key   seriesKey
	start pcommon.Timestamp
	count int64
	// batch is the number of the last batch that counted into the series, so
	// that a batch emits each series it touched once.
	batch uint64
}

// policyDenies counts violation observations per label set for as long as the
// collector runs, and after each batch emits the cumulative value of every series
// the batch touched.
type policyDenies struct {
	component.StartFunc
	component.ShutdownFunc

	next      consumer.Metrics
	logger    *zap.Logger
	tel       *telemetry
	maxSeries int
	now       func() time.Time

	mu     sync.Mutex
	series map[seriesKey]*series
	batch  uint64
	// last is the timestamp of the last emitted points. Each batch's points are
	// stamped later than the previous batch's, under the lock, so that a consumer
	// that keeps the latest point of a series (the Prometheus exporter does) keeps
	// the highest count even when two batches are handed on out of order.
	last pcommon.Timestamp
	// warned is set once the max_series warning has been logged.
	warned bool
}

var _ connector.Logs = (*policyDenies)(nil)

func newConnector(set connector.Settings, cfg *Config, next consumer.Metrics) (*policyDenies, error) {
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, err
	}
	return &policyDenies{
		next:      next,
		logger:    set.Logger,
		tel:       tel,
		maxSeries: cfg.MaxSeries,
		now:       time.Now,
		series:    map[seriesKey]*series{},
	}, nil
}

// Capabilities reports that the connector does not change the logs it reads.
func (*policyDenies) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs counts the batch's violation observations and hands on the
// cumulative points of the series it touched.
func (c *policyDenies) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	md, points, dropped, warn := c.count(ld)
	if dropped > 0 {
		c.tel.drop(ctx, dropped)
		if warn {
			c.logger.Warn("Too many policy denies series: observations that would start a new series are not counted; see "+MetricDropped,
				zap.Int("max_series", c.maxSeries))
		}
	}
	if points == 0 {
		return nil
	}
	return c.next.ConsumeMetrics(ctx, md)
}

// count adds the batch's observations to the series and returns the points of
// the touched series, how many observations max_series dropped, and whether the
// caller should warn about that (the first time only).
func (c *policyDenies) count(ld plog.Logs) (md pmetric.Metrics, points int, dropped int64, warn bool) {
	c.mu.Lock()
	defer c.mu.Unlock()

	c.batch++
	begin := pcommon.NewTimestampFromTime(c.now())
	var touched []*series
	flow.EachLogRecord(ld, func(lr plog.LogRecord) {
		if lr.EventName() != EventName {
			return
		}
		key := keyOf(lr)
		s, ok := c.series[key]
		if !ok {
			if len(c.series) >= c.maxSeries {
				dropped++
				return
			}
			s = &series{key: key, start: begin}
			c.series[key] = s
		}
		if s.batch != c.batch {
			s.batch = c.batch
			touched = append(touched, s)
		}
		s.count++
	})
	if dropped > 0 && !c.warned {
		c.warned = true
		warn = true
	}
	if len(touched) == 0 {
		return md, 0, dropped, warn
	}

	// The points are stamped after every start they carry and after the
	// previous batch's points.
	ts := pcommon.NewTimestampFromTime(c.now())
	if ts <= begin {
		ts = begin + 1
	}
	if ts <= c.last {
		ts = c.last + 1
	}
	c.last = ts

	md = pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	m := sm.Metrics().AppendEmpty()
	m.SetName(MetricDenies)
	m.SetUnit(metricUnit)
	m.SetDescription(metricDescription)
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dps := sum.DataPoints()
	dps.EnsureCapacity(len(touched))
	for _, s := range touched {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(s.start)
		dp.SetTimestamp(ts)
		dp.SetIntValue(s.count)
		attrs := dp.Attributes()
		attrs.EnsureCapacity(len(labelKeys))
		for i, name := range labelKeys {
			attrs.PutStr(name, s.key[i])
		}
	}
	return md, len(touched), dropped, warn
}
