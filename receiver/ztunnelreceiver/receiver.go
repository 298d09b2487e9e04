package ztunnelreceiver

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// errStandby is what a standby answers an OTLP request with. It is not a
// permanent error, so the OTLP listener answers gRPC Unavailable or HTTP 503,
// which senders retry.
var errStandby = errors.New("this replica is a standby: send to the leader")

// ztunnelReceiver turns ztunnel lines from its inputs (the OTLP listeners, the
// file tailer) into flow records: each input hands it lines, one converter and one
// joiner serve them all.
type ztunnelReceiver struct {
	set       receiver.Settings
	cfg       *Config
	next      consumer.Logs
	telemetry *flowsource.Telemetry
	unjoined  metric.Int64Counter
	evicted   metric.Int64Counter
	refused   metric.Int64Counter
	obs       obsReports

	conv     converter
	joiner   *joiner
	partials partialLines
	warned   sync.Map // trust domains already reported in the log

	// inputs are the OTLP receiver and the file input, built by the factory.
	inputs []component.Component
	// leader, when the config names a leader elector, says whether this replica
	// leads; the OTLP input refuses records while it does not.
	leader leaderelectorextension.LeaderElection

	stop chan struct{}
	done chan struct{}
}

func newZtunnelReceiver(set receiver.Settings, cfg *Config, next consumer.Logs) (*ztunnelReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	obs, err := newObsReports(set)
	if err != nil {
		return nil, err
	}
	tel := flowsource.NewTelemetry(set.ID, flowsource.Counters{
		Accepted: tb.NetworkEnforcerReceiverFlowsAccepted, Dropped: tb.NetworkEnforcerReceiverFlowsDropped,
	})
	r := &ztunnelReceiver{
		set: set, cfg: cfg, next: next, telemetry: tel, obs: obs, unjoined: tb.NetworkEnforcerReceiverUnjoinedDecisions,
		evicted: tb.NetworkEnforcerReceiverJoinEvictions, refused: tb.NetworkEnforcerReceiverRefusedStandby,
		joiner: newJoiner(cfg.JoinWindow, cfg.JoinMaxHeld),
	}
	r.conv = converter{trustDomain: cfg.TrustDomain, foreignDomain: r.warnForeignDomain}
	return r, nil
}

// Start starts the join clock and the inputs.
func (r *ztunnelReceiver) Start(ctx context.Context, host component.Host) error {
	var err error
	if r.leader, err = leaderelectorextension.FindOptional[leaderelectorextension.LeaderElection](host, r.cfg.LeaderElector); err != nil {
		return err
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.expireLoop() //nolint:gosec // G118: Start's context ends with Start; the loop runs until Shutdown.
	for i, in := range r.inputs {
		if err := in.Start(ctx, host); err != nil {
			for _, started := range r.inputs[:i] {
				_ = started.Shutdown(ctx)
			}
			r.stopClock()
			return err
		}
	}
	return nil
}

// Shutdown stops the inputs, then hands on what the joiner still holds, so that
// no decision or denial is lost at a restart.
func (r *ztunnelReceiver) Shutdown(ctx context.Context) error {
	var errs []error
	for _, in := range r.inputs {
		errs = append(errs, in.Shutdown(ctx))
	}
	if r.stop != nil {
		r.stopClock()
		var out joined
		r.joiner.flush(&out)
		errs = append(errs, r.emit(ctx, &out))
	}
	return errors.Join(errs...)
}

func (r *ztunnelReceiver) stopClock() {
	close(r.stop)
	<-r.done
}

// expireLoop hands on, a few times per join window, the lines that waited long
// enough.
func (r *ztunnelReceiver) expireLoop() {
	defer close(r.done)
	tick := time.NewTicker(max(r.cfg.JoinWindow/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			var out joined
			r.joiner.expire(now, &out)
			if err := r.emit(context.Background(), &out); err != nil {
				r.set.Logger.Warn("Could not hand on joined ztunnel flows", zap.Error(err))
			}
		}
	}
}

// emit counts what out holds and hands its records to the pipeline in one
// batch: a receive operation of each input that the records came from.
func (r *ztunnelReceiver) emit(ctx context.Context, out *joined) error {
	// Counted per reason: a batch's drops are of few reasons.
	for len(out.drops) > 0 {
		reason, n := out.drops[0], 0
		kept := out.drops[:0]
		for _, d := range out.drops {
			if d == reason {
				n++
			} else {
				kept = append(kept, d)
			}
		}
		r.telemetry.DroppedN(ctx, reason, n)
		out.drops = kept
	}
	if out.unjoined > 0 {
		r.unjoined.Add(ctx, int64(out.unjoined), metric.WithAttributes(attribute.String("receiver", r.set.ID.String())))
	}
	if out.evicted > 0 {
		r.evicted.Add(ctx, int64(out.evicted), metric.WithAttributes(attribute.String("receiver", r.set.ID.String())))
	}
	if out.n == 0 {
		return nil
	}
	r.telemetry.Accepted(ctx, out.n)
	return r.obs.consume(ctx, r.next, out.logs, &out.from)
}

func (r *ztunnelReceiver) warnForeignDomain(domain string) {
	if _, seen := r.warned.LoadOrStore(domain, true); !seen {
		r.set.Logger.Warn("Dropping flows from a source identity outside the configured trust domain; set trust_domain if this is your mesh",
			zap.String("trust_domain", r.cfg.TrustDomain), zap.String("identity_trust_domain", domain))
	}
}

// flowRecord hands on lr, from input in, which is already a flow record (its
// event name is flow.EventName), as this binary's node agent forwards them.
func flowRecord(lr plog.LogRecord, in input, out *joined) {
	var rec flow.Record
	rec.ReadFrom(lr)
	out.add(&rec, in)
}
