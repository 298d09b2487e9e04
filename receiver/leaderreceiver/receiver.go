package leaderreceiver

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/receiver/leaderreceiver/internal/metadata"
)

// errStandby is what a standby answers. It is not permanent, so the request
// is answered with gRPC Unavailable, which the sender retries.
var errStandby = errors.New("not the leader: send to the leader")

// Drop reasons of network_enforcer_leader_receiver_records_dropped.
const (
	reasonDuplicate = "duplicate"
	// reasonMalformedProgress is a source's progress record without a key
	// or a time: no sender of this distribution writes one.
	reasonMalformedProgress = "malformed_progress"
)

// leaderReceiver takes the readers' batches on the leader: the collector's
// OTLP receiver serves the listener (gRPC only), and hands each batch to
// consume.
type leaderReceiver struct {
	set  receiver.Settings
	cfg  *Config
	next consumer.Logs
	otlp receiver.Logs
	dups *duplicates
	now  func() time.Time

	accepted, refused, dropped            metric.Int64Counter
	attrs, duplicateAttrs, malformedAttrs metric.MeasurementOption

	leader   leaderelectorextension.LeaderElection
	counting enforcerextension.Counting
}

func newLeaderReceiver(ctx context.Context, set receiver.Settings, cfg *Config, next consumer.Logs) (*leaderReceiver, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	id := attribute.String("receiver", set.ID.String())
	r := &leaderReceiver{
		set: set, cfg: cfg, next: next,
		dups: newDuplicates(cfg.DuplicateWindow), now: time.Now,
		accepted: tb.NetworkEnforcerLeaderReceiverRecordsAccepted,
		refused:  tb.NetworkEnforcerLeaderReceiverRecordsRefused,
		dropped:  tb.NetworkEnforcerLeaderReceiverRecordsDropped,
		attrs:    metric.WithAttributeSet(attribute.NewSet(id)),
		duplicateAttrs: metric.WithAttributeSet(attribute.NewSet(id,
			attribute.String("reason", reasonDuplicate))),
		malformedAttrs: metric.WithAttributeSet(attribute.NewSet(id,
			attribute.String("reason", reasonMalformedProgress))),
	}
	f := otlpreceiver.NewFactory()
	oc := f.CreateDefaultConfig().(*otlpreceiver.Config)
	oc.Protocols.GRPC = configoptional.Some(cfg.ServerConfig)
	oc.Protocols.HTTP = configoptional.None[otlpreceiver.HTTPConfig]()
	// The OTLP receiver checks that it runs under its own type; its
	// telemetry (the collector's standard receiver counts) then names it
	// otlp/<this receiver's ID>.
	oset := set
	oset.ID = component.NewIDWithName(f.Type(), strings.ReplaceAll(set.ID.String(), "/", "_"))
	take, err := consumer.NewLogs(r.consume)
	if err != nil {
		return nil, err
	}
	if r.otlp, err = f.CreateLogs(ctx, oset, oc, take); err != nil {
		return nil, err
	}
	return r, nil
}

// Start finds the leader elector and the enforcer extension, and opens the
// listener.
func (r *leaderReceiver) Start(ctx context.Context, host component.Host) error {
	leader, err := leaderelectorextension.Find[leaderelectorextension.LeaderElection](host, r.cfg.LeaderElector)
	if err != nil {
		return err
	}
	counting, err := enforcerextension.Find[enforcerextension.Counting](host, r.cfg.Enforcer)
	if err != nil {
		return err
	}
	r.leader, r.counting = leader, counting
	return r.otlp.Start(ctx, host)
}

// Shutdown stops the listener: the requests under way finish first, unless
// ctx ends before.
func (r *leaderReceiver) Shutdown(ctx context.Context) error {
	return r.otlp.Shutdown(ctx)
}

// consume takes a reader's batch: only while this replica leads, and without
// the violation candidates accepted within the duplicate window. An error is
// answered as the OTLP receiver answers one: a gRPC status as it is (a
// standby's Unavailable, which the sender retries), else Unavailable for a
// transient error and a refusal for a permanent one.
func (r *leaderReceiver) consume(ctx context.Context, ld plog.Logs) error {
	n := ld.LogRecordCount()
	if n == 0 {
		return nil
	}
	if !r.leader.IsLeader() {
		r.refused.Add(ctx, int64(n), r.attrs)
		return status.Error(codes.Unavailable, errStandby.Error())
	}
	t := r.take(ld)
	if t.duplicates > 0 {
		r.dropped.Add(ctx, int64(t.duplicates), r.duplicateAttrs)
	}
	if t.malformed > 0 {
		r.dropped.Add(ctx, int64(t.malformed), r.malformedAttrs)
		r.set.Logger.Warn("Dropped progress records without a key or a time", zap.Int("records", t.malformed))
	}
	if n = ld.LogRecordCount(); n > 0 {
		err := r.next.ConsumeLogs(ctx, ld)
		r.dups.settle(t.ids, err == nil, r.now())
		if err != nil {
			return err
		}
	}
	r.count(t.progress)
	// A progress record noted is taken as well: what the readers sent is
	// what the leader accepted or dropped.
	r.accepted.Add(ctx, int64(n+len(t.progress)), r.attrs)
	return nil
}

// count tells the membership how far a batch that the pipeline took reaches
// in each source: the next owner of a source whose reader is killed counts
// from there, not from the reader's last published checkpoint.
func (r *leaderReceiver) count(progress []flowsource.Mark) {
	for _, m := range progress {
		r.counting.Counted(m.Key, m.Time)
	}
}

// taken is what take removed from a batch, or claimed in it.
type taken struct {
	// ids are the identities of the violation candidates kept, claimed until
	// the pipeline answers (settle).
	ids []uint64
	// duplicates counts the candidates dropped: accepted within the window,
	// or held by another request.
	duplicates int
	// progress is the sources' progress records, the leader's to note and
	// not the pipeline's; malformed counts those without a key or a time.
	progress  []flowsource.Mark
	malformed int
}

// take removes from ld, in one pass, the violation candidates that are
// duplicates and the sources' progress records, and claims the candidates
// that it keeps.
func (r *leaderReceiver) take(ld plog.Logs) taken {
	var t taken
	var keys []string
	now := r.now()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool {
				switch lr.EventName() {
				case flowsource.ProgressEventName:
					if m, ok := flowsource.ReadProgress(lr); ok {
						t.progress = append(t.progress, m)
					} else {
						t.malformed++
					}
					return true
				case learning.CandidateEventName:
					id := r.dups.identity(lr, &keys)
					if !r.dups.claim(id, now) {
						t.duplicates++
						return true
					}
					t.ids = append(t.ids, id)
				}
				return false
			})
		}
	}
	return t
}
