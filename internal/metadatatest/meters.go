package metadatatest

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// touchingProvider is the SDK's meter provider, with one addition: every
// instrument created through it gets a zero measurement (an observable one, a
// callback that observes zero). A reader reports only instruments that have
// data, and a component's counters have none until it runs; touched, each
// instrument that the component registered shows in a collection with its
// name, description, unit and kind, as the SDK holds them.
type touchingProvider struct {
	*sdkmetric.MeterProvider

	mu sync.Mutex
	// async records, by scope and name, whether an instrument is observable.
	async map[string]map[string]bool
}

func newTouchingProvider(reader sdkmetric.Reader) *touchingProvider {
	return &touchingProvider{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), async: map[string]map[string]bool{}}
}

// Meter returns the SDK's meter, touching what is created on it.
func (p *touchingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &touchingMeter{Meter: p.MeterProvider.Meter(name, opts...), scope: name, p: p}
}

func (p *touchingProvider) created(scope, name string, async bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.async[scope] == nil {
		p.async[scope] = map[string]bool{}
	}
	p.async[scope][name] = async
}

// touchingMeter is a meter of a touchingProvider.
type touchingMeter struct {
	metric.Meter
	scope string
	p     *touchingProvider
}

// touch records a synchronous instrument, measuring zero on it when it was
// created.
func touch[I any](m *touchingMeter, name string, inst I, err error, zero func(I)) (I, error) {
	if err == nil {
		m.p.created(m.scope, name, false)
		zero(inst)
	}
	return inst, err
}

// observe records an observable instrument and registers a callback that
// observes zero on it.
func observe[I metric.Observable](m *touchingMeter, name string, inst I, err error, zero func(metric.Observer, I)) (I, error) {
	if err != nil {
		return inst, err
	}
	m.p.created(m.scope, name, true)
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		zero(o, inst)
		return nil
	}, inst)
	return inst, err
}

// bg is the context of the zero measurements.
var bg = context.Background()

func (m *touchingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	i, err := m.Meter.Int64Counter(name, opts...)
	return touch(m, name, i, err, func(i metric.Int64Counter) { i.Add(bg, 0) })
}

func (m *touchingMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	i, err := m.Meter.Int64UpDownCounter(name, opts...)
	return touch(m, name, i, err, func(i metric.Int64UpDownCounter) { i.Add(bg, 0) })
}

func (m *touchingMeter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	i, err := m.Meter.Int64Histogram(name, opts...)
	return touch(m, name, i, err, func(i metric.Int64Histogram) { i.Record(bg, 0) })
}

func (m *touchingMeter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	i, err := m.Meter.Int64Gauge(name, opts...)
	return touch(m, name, i, err, func(i metric.Int64Gauge) { i.Record(bg, 0) })
}

func (m *touchingMeter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	i, err := m.Meter.Float64Counter(name, opts...)
	return touch(m, name, i, err, func(i metric.Float64Counter) { i.Add(bg, 0) })
}

func (m *touchingMeter) Float64UpDownCounter(name string, opts ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	i, err := m.Meter.Float64UpDownCounter(name, opts...)
	return touch(m, name, i, err, func(i metric.Float64UpDownCounter) { i.Add(bg, 0) })
}

func (m *touchingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	i, err := m.Meter.Float64Histogram(name, opts...)
	return touch(m, name, i, err, func(i metric.Float64Histogram) { i.Record(bg, 0) })
}

func (m *touchingMeter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	i, err := m.Meter.Float64Gauge(name, opts...)
	return touch(m, name, i, err, func(i metric.Float64Gauge) { i.Record(bg, 0) })
}

func (m *touchingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	i, err := m.Meter.Int64ObservableCounter(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Int64ObservableCounter) { o.ObserveInt64(i, 0) })
}

func (m *touchingMeter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	i, err := m.Meter.Int64ObservableUpDownCounter(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Int64ObservableUpDownCounter) { o.ObserveInt64(i, 0) })
}

func (m *touchingMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	i, err := m.Meter.Int64ObservableGauge(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Int64ObservableGauge) { o.ObserveInt64(i, 0) })
}

func (m *touchingMeter) Float64ObservableCounter(name string, opts ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	i, err := m.Meter.Float64ObservableCounter(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Float64ObservableCounter) { o.ObserveFloat64(i, 0) })
}

func (m *touchingMeter) Float64ObservableUpDownCounter(name string, opts ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	i, err := m.Meter.Float64ObservableUpDownCounter(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Float64ObservableUpDownCounter) { o.ObserveFloat64(i, 0) })
}

func (m *touchingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	i, err := m.Meter.Float64ObservableGauge(name, opts...)
	return observe(m, name, i, err, func(o metric.Observer, i metric.Float64ObservableGauge) { o.ObserveFloat64(i, 0) })
}
