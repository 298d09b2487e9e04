package instruments

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// Registrations are the callbacks registered so far. The zero value is ready.
type Registrations struct {
	mu   sync.Mutex
	regs []metric.Registration
}

// RegisterInt64 makes cb observe inst, an instrument of meter.
func (r *Registrations) RegisterInt64(meter metric.Meter, inst metric.Int64Observable, cb metric.Int64Callback) error {
	reg, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return cb(ctx, &observerInt64{inst: inst, obs: o})
	}, inst)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.regs = append(r.regs, reg)
	return nil
}

// Shutdown unregisters every callback.
func (r *Registrations) Shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, reg := range r.regs {
		_ = reg.Unregister()
	}
	r.regs = nil
}

// observerInt64 observes one instrument in a callback registered for it.
type observerInt64 struct {
	embedded.Int64Observer
	inst metric.Int64Observable
	obs  metric.Observer
}

func (oi *observerInt64) Observe(value int64, opts ...metric.ObserveOption) {
	oi.obs.ObserveInt64(oi.inst, value, opts...)
}
