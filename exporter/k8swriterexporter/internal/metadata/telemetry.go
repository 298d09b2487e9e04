package metadata

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// Meter returns the meter of the component's scope.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the component's instruments, created as
// metadata.yaml lists them.
type TelemetryBuilder struct {
	meter                                       metric.Meter
	mu                                          sync.Mutex
	registrations                               []metric.Registration
	NetworkEnforcerObservedEdgesNotTracked      metric.Int64ObservableGauge
	NetworkEnforcerObservedEdgesTracked         metric.Int64ObservableGauge
	NetworkEnforcerObservedEdgesUntracked       metric.Int64ObservableCounter
	NetworkEnforcerObservedEstimatorsUnreadable metric.Int64ObservableCounter
	NetworkEnforcerWriterAPIWrites              metric.Int64Counter
	NetworkEnforcerWriterUnwrittenProposals     metric.Int64ObservableGauge
}

// RegisterNetworkEnforcerObservedEdgesNotTrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesNotTracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesNotTrackedCallback(cb metric.Int64Callback) error {
	reg, err := builder.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: builder.NetworkEnforcerObservedEdgesNotTracked, obs: o})
	}, builder.NetworkEnforcerObservedEdgesNotTracked)
	if err != nil {
		return err
	}
	builder.mu.Lock()
	defer builder.mu.Unlock()
	builder.registrations = append(builder.registrations, reg)
	return nil
}

// RegisterNetworkEnforcerObservedEdgesTrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesTracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesTrackedCallback(cb metric.Int64Callback) error {
	reg, err := builder.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: builder.NetworkEnforcerObservedEdgesTracked, obs: o})
	}, builder.NetworkEnforcerObservedEdgesTracked)
	if err != nil {
		return err
	}
	builder.mu.Lock()
	defer builder.mu.Unlock()
	builder.registrations = append(builder.registrations, reg)
	return nil
}

// RegisterNetworkEnforcerObservedEdgesUntrackedCallback sets the callback that observes NetworkEnforcerObservedEdgesUntracked.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEdgesUntrackedCallback(cb metric.Int64Callback) error {
	reg, err := builder.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: builder.NetworkEnforcerObservedEdgesUntracked, obs: o})
	}, builder.NetworkEnforcerObservedEdgesUntracked)
	if err != nil {
		return err
	}
	builder.mu.Lock()
	defer builder.mu.Unlock()
	builder.registrations = append(builder.registrations, reg)
	return nil
}

// RegisterNetworkEnforcerObservedEstimatorsUnreadableCallback sets the callback that observes NetworkEnforcerObservedEstimatorsUnreadable.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerObservedEstimatorsUnreadableCallback(cb metric.Int64Callback) error {
	reg, err := builder.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: builder.NetworkEnforcerObservedEstimatorsUnreadable, obs: o})
	}, builder.NetworkEnforcerObservedEstimatorsUnreadable)
	if err != nil {
		return err
	}
	builder.mu.Lock()
	defer builder.mu.Unlock()
	builder.registrations = append(builder.registrations, reg)
	return nil
}

// RegisterNetworkEnforcerWriterUnwrittenProposalsCallback sets the callback that observes NetworkEnforcerWriterUnwrittenProposals.
func (builder *TelemetryBuilder) RegisterNetworkEnforcerWriterUnwrittenProposalsCallback(cb metric.Int64Callback) error {
	reg, err := builder.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: builder.NetworkEnforcerWriterUnwrittenProposals, obs: o})
	}, builder.NetworkEnforcerWriterUnwrittenProposals)
	if err != nil {
		return err
	}
	builder.mu.Lock()
	defer builder.mu.Unlock()
	builder.registrations = append(builder.registrations, reg)
	return nil
}

// observerInt64 observes one instrument in a callback of several.
type observerInt64 struct {
	embedded.Int64Observer
	inst metric.Int64Observable
	obs  metric.Observer
}

func (oi *observerInt64) Observe(value int64, opts ...metric.ObserveOption) {
	oi.obs.ObserveInt64(oi.inst, value, opts...)
}

// Shutdown unregisters the callbacks of the observable instruments.
func (builder *TelemetryBuilder) Shutdown() {
	builder.mu.Lock()
	defer builder.mu.Unlock()
	for _, reg := range builder.registrations {
		_ = reg.Unregister()
	}
	builder.registrations = nil
}

// NewTelemetryBuilder creates the component's instruments on the meter of
// its scope.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	builder := TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	builder.NetworkEnforcerObservedEdgesNotTracked, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_observed_edges_not_tracked",
		metric.WithDescription("Distinct observed edges that the last statuses counted by estimate only: past the tracking limit, or not listed by an earlier writer."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEdgesTracked, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_observed_edges_tracked",
		metric.WithDescription("Observed edges held in memory."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEdgesUntracked, err = builder.meter.Int64ObservableCounter(
		"network_enforcer_observed_edges_untracked",
		metric.WithDescription("Flow sides of observed edges not tracked: new edges of an object that tracks max_tracked_edges already."),
		metric.WithUnit("{flow}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerObservedEstimatorsUnreadable, err = builder.meter.Int64ObservableCounter(
		"network_enforcer_observed_estimators_unreadable",
		metric.WithDescription("Statuses whose estimators did not decode: their counts started again from what they list."),
		metric.WithUnit("{status}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerWriterAPIWrites, err = builder.meter.Int64Counter(
		"network_enforcer_writer_api_writes",
		metric.WithDescription("Writes to the Kubernetes API, by operation (create, update, status) and result (ok, refused, error)."),
		metric.WithUnit("{write}"),
	)
	errs = errors.Join(errs, err)
	builder.NetworkEnforcerWriterUnwrittenProposals, err = builder.meter.Int64ObservableGauge(
		"network_enforcer_writer_unwritten_proposals",
		metric.WithDescription("Proposals that learned something whose write has not finished yet."),
		metric.WithUnit("{proposal}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}
