package leaderexporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// errNoLeader is what a send answers while no leader is known. It is not
// permanent: the exporter helper tries again.
var errNoLeader = errors.New("no leader is known yet")

// sender sends batches to the leader's receiver through the collector's OTLP
// exporter, one made for <LeaderAddress()>:<port> and made again when the
// leader's address changes, as contrib's load-balancing exporter makes one
// per backend. The OTLP exporter owns the gRPC client and the mapping of the
// leader's answers (Unavailable, a standby's answer, and the other transient
// codes are retried; the rest are permanent); the leader exporter's own
// exporter helper queues and retries.
type sender struct {
	set       exporter.Settings
	cfg       *Config
	telemetry *telemetry
	otlp      exporter.Factory

	locator enforcerextension.LeaderLocator
	host    component.Host

	// sendMu keeps the batches in order (the one being sent, and those sent
	// again before it) and guards the OTLP exporter of the leader's address.
	sendMu sync.Mutex
	addr   string
	leader exporter.Logs
	// batches numbers the batches of learned records, and keeps them for
	// the next leader.
	batches *resendable
}

// newSender returns a sender; its telemetry is set before it starts.
func newSender(set exporter.Settings, cfg *Config) *sender {
	return &sender{set: set, cfg: cfg, otlp: otlpexporter.NewFactory(), batches: newResendable(cfg.ResendWindow)}
}

func (s *sender) start(_ context.Context, host component.Host) error {
	locator, err := enforcerextension.Find[enforcerextension.LeaderLocator](host, s.cfg.Enforcer)
	if err != nil {
		return err
	}
	s.locator, s.host = locator, host
	return nil
}

// shutdown shuts the OTLP exporter of the leader down, which closes its
// connection.
func (s *sender) shutdown(ctx context.Context) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.closeLeader(ctx)
}

func (s *sender) closeLeader(ctx context.Context) error {
	if s.leader == nil {
		return nil
	}
	err := s.leader.Shutdown(ctx)
	s.leader, s.addr = nil, ""
	return err
}

// exporterFor returns the OTLP exporter of the leader at addr, made and
// started anew when the leader moved, the old one shut down. Called under
// sendMu.
func (s *sender) exporterFor(ctx context.Context, addr string) (exporter.Logs, error) {
	if s.leader != nil && s.addr == addr {
		return s.leader, nil
	}
	if s.leader != nil {
		s.set.Logger.Info("The leader moved: connecting to the new one", zap.String("from", s.addr), zap.String("to", addr))
		if err := s.closeLeader(ctx); err != nil {
			s.set.Logger.Debug("Could not close the connection to the previous leader", zap.Error(err))
		}
	}
	endpoint := net.JoinHostPort(addr, strconv.Itoa(s.cfg.Port))
	oc := s.otlpConfig(endpoint)
	set := s.set
	// The OTLP exporter checks that it runs under its own type; its
	// telemetry (the collector's standard exporter counts) then names it
	// otlp_grpc/<this exporter's ID>, the same whichever replica leads.
	set.ID = component.NewIDWithName(s.otlp.Type(), strings.ReplaceAll(s.set.ID.String(), "/", "_"))
	// Each failed try is logged by this exporter's own helper, which says
	// whether it tries again; the OTLP exporter's log of the same failure
	// would say that the data is rejected, which it is not.
	set.Logger = s.set.Logger.With(zap.String("leader", endpoint)).WithOptions(zap.IncreaseLevel(zapcore.DPanicLevel))
	exp, err := s.otlp.CreateLogs(ctx, set, oc)
	if err != nil {
		return nil, consumererror.NewPermanent(fmt.Errorf("create the exporter to the leader at %s: %w", endpoint, err))
	}
	if err := exp.Start(ctx, s.host); err != nil {
		_ = exp.Shutdown(ctx)
		return nil, consumererror.NewPermanent(fmt.Errorf("connect to the leader at %s: %w", endpoint, err))
	}
	s.leader, s.addr = exp, addr
	return exp, nil
}

// otlpConfig is the OTLP exporter's configuration for the leader at
// endpoint: the gRPC client settings with that endpoint, and neither a queue,
// retries nor a timeout, which are this exporter's own: the kept batches go
// before the next one, in order, within the same send.
func (s *sender) otlpConfig(endpoint string) *otlpexporter.Config {
	oc := s.otlp.CreateDefaultConfig().(*otlpexporter.Config)
	oc.ClientConfig = s.cfg.ClientConfig
	oc.ClientConfig.Endpoint = endpoint
	oc.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	oc.RetryConfig.Enabled = false
	oc.TimeoutConfig.Timeout = 0
	return oc
}

// push sends ld to the leader; the exporter helper retries what is not a
// permanent error. A batch of learned records is numbered at its first try
// and kept once the leader took it, without its coverage gaps, which go once:
// a new leader (another process than the one that took the last batch) is
// first sent again what is kept, in order, since the previous one may have
// died before it wrote it.
func (s *sender) push(ctx context.Context, ld plog.Logs) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.dropWritten()
	exp, leader, err := s.leaderExporter(ctx)
	if err != nil {
		return err
	}
	seq := int64(0)
	if hasKept(ld) {
		seq = s.batches.number(ld)
	}
	now := time.Now()
	if err := s.sendAgain(ctx, exp, leader, seq, now); err != nil {
		return err
	}
	if err := s.export(ctx, exp, ld); err != nil {
		return err
	}
	if seq > 0 {
		// A next leader is told that this one took it: this one reported
		// its violations already.
		ld = toKeep(ld)
		flowsource.MarkTaken(ld)
	}
	s.batches.took(leader, seq, ld, now)
	return nil
}

// sendKept sends what is kept to a new leader without waiting for the next
// batch: a reader that leads now reads nothing more, and a quiet one may
// send nothing for long. An error is the next try's to mend.
func (s *sender) sendKept(ctx context.Context) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.locator == nil {
		return nil
	}
	s.dropWritten()
	if s.batches.len() == 0 {
		return nil
	}
	exp, leader, err := s.leaderExporter(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := s.sendAgain(ctx, exp, leader, 0, now); err != nil {
		return err
	}
	s.batches.took(leader, 0, plog.Logs{}, now)
	return nil
}

// dropWritten drops the kept batches that the leader that took them says it
// wrote. Called under sendMu.
func (s *sender) dropWritten() {
	if s.locator == nil || s.batches.len() == 0 {
		return
	}
	if leader, seq, ok := s.locator.WrittenThrough(s.batches.sender); ok {
		s.batches.written(leader, seq)
	}
}

// leaderExporter is the OTLP exporter of the leader and the leader's
// identity, a name new with each start of its process.
func (s *sender) leaderExporter(ctx context.Context) (exporter.Logs, string, error) {
	if s.locator == nil {
		return nil, "", errors.New("leader exporter not started")
	}
	addr, leader, ok := s.locator.LeaderAddress()
	if !ok {
		return nil, "", errNoLeader
	}
	exp, err := s.exporterFor(ctx, addr)
	return exp, leader, err
}

// sendAgain sends leader what is kept before batch seq, when leader did not
// take the last batch.
func (s *sender) sendAgain(ctx context.Context, exp exporter.Logs, leader string, seq int64, now time.Time) error {
	for _, again := range s.batches.toSendAgain(leader, seq, now) {
		if err := s.export(ctx, exp, again.ld); err != nil {
			return err
		}
		s.batches.resent(leader, again.seq, now)
		s.telemetry.resent.Add(ctx, int64(again.ld.LogRecordCount()), s.telemetry.attrs)
	}
	return nil
}

// export sends one batch and counts what the leader took.
func (s *sender) export(ctx context.Context, exp exporter.Logs, ld plog.Logs) error {
	if err := exp.ConsumeLogs(ctx, ld); err != nil {
		return err
	}
	s.telemetry.sent.Add(ctx, int64(ld.LogRecordCount()), s.telemetry.attrs)
	return nil
}
