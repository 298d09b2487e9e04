package leaderexporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
)

// errNoLeader is what a send answers while no leader is known. It is not
// permanent: the exporter helper tries again.
var errNoLeader = errors.New("no leader is known yet")

// sender sends batches to the leader's receiver: a gRPC client to
// <LeaderAddress()>:<port>, made again when the leader's address changes.
type sender struct {
	set       exporter.Settings
	cfg       *Config
	telemetry *telemetry

	locator enforcerextension.LeaderLocator
	host    component.Host

	mu     sync.Mutex
	addr   string
	conn   *grpc.ClientConn
	client plogotlp.GRPCClient

	// sendMu keeps the batches in order: the one being sent, and those sent
	// again before it.
	sendMu sync.Mutex
	// batches numbers the batches of learned records, and keeps them for
	// the next leader.
	batches *resendable
}

func newSender(set exporter.Settings, cfg *Config, tel *telemetry) *sender {
	return &sender{set: set, cfg: cfg, telemetry: tel, batches: newResendable(cfg.ResendWindow)}
}

func (s *sender) start(_ context.Context, host component.Host) error {
	locator, err := enforcerextension.Find[enforcerextension.LeaderLocator](host, s.cfg.Enforcer)
	if err != nil {
		return err
	}
	s.locator, s.host = locator, host
	return nil
}

func (s *sender) shutdown(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn, s.client, s.addr = nil, nil, ""
	return err
}

// clientFor returns the client of the leader at addr, dialled anew when the
// leader moved.
func (s *sender) clientFor(ctx context.Context, addr string) (plogotlp.GRPCClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.addr == addr {
		return s.client, nil
	}
	if s.conn != nil {
		s.set.Logger.Info("The leader moved: connecting to the new one", zap.String("from", s.addr), zap.String("to", addr))
		_ = s.conn.Close() // a send still on it fails with a retryable error
		s.conn, s.client, s.addr = nil, nil, ""
	}
	cc := flowsource.NewClientConfig(net.JoinHostPort(addr, strconv.Itoa(s.cfg.Port)))
	cc.TLS = s.cfg.TLS
	conn, err := cc.ToClientConn(ctx, s.host.GetExtensions(), s.set.TelemetrySettings)
	if err != nil {
		return nil, consumererror.NewPermanent(fmt.Errorf("connect to the leader at %s: %w", cc.Endpoint, err))
	}
	s.conn, s.client, s.addr = conn, plogotlp.NewGRPCClient(conn), addr
	return s.client, nil
}

// push sends ld to the leader; the exporter helper retries what is not a
// permanent error. A batch of learned records is numbered at its first try
// and kept once the leader took it: a new leader (another process than the
// one that took the last batch) is first sent again what is kept, in order,
// since the previous one may have died before it wrote it.
func (s *sender) push(ctx context.Context, ld plog.Logs) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	client, leader, err := s.leaderClient(ctx)
	if err != nil {
		return err
	}
	seq := int64(0)
	if hasMergeable(ld) {
		seq = s.batches.number(ld)
	}
	now := time.Now()
	if err := s.sendAgain(ctx, client, leader, seq, now); err != nil {
		return err
	}
	if err := s.export(ctx, client, ld); err != nil {
		return err
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
	if s.batches.len() == 0 || s.locator == nil {
		return nil
	}
	client, leader, err := s.leaderClient(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := s.sendAgain(ctx, client, leader, 0, now); err != nil {
		return err
	}
	s.batches.took(leader, 0, plog.Logs{}, now)
	return nil
}

// leaderClient is the client of the leader and its identity.
func (s *sender) leaderClient(ctx context.Context) (plogotlp.GRPCClient, string, error) {
	if s.locator == nil {
		return nil, "", errors.New("leader exporter not started")
	}
	addr, leader, ok := s.locator.LeaderAddress()
	if !ok {
		return nil, "", errNoLeader
	}
	client, err := s.clientFor(ctx, addr)
	return client, leader, err
}

// sendAgain sends leader what is kept before batch seq, when leader did not
// take the last batch.
func (s *sender) sendAgain(ctx context.Context, client plogotlp.GRPCClient, leader string, seq int64, now time.Time) error {
	for _, again := range s.batches.toSendAgain(leader, seq, now) {
		if err := s.export(ctx, client, again); err != nil {
			return err
		}
		s.telemetry.resent.Add(ctx, int64(again.LogRecordCount()), s.telemetry.attrs)
	}
	return nil
}

// export sends one batch and counts what the leader took.
func (s *sender) export(ctx context.Context, client plogotlp.GRPCClient, ld plog.Logs) error {
	resp, err := client.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	if err := processError(err); err != nil {
		return err
	}
	sent := int64(ld.LogRecordCount())
	if ps := resp.PartialSuccess(); ps.RejectedLogRecords() != 0 || ps.ErrorMessage() != "" {
		s.set.Logger.Warn("The leader took part of a batch", zap.String("message", ps.ErrorMessage()),
			zap.Int64("rejected_log_records", ps.RejectedLogRecords()))
		sent -= ps.RejectedLogRecords()
	}
	s.telemetry.sent.Add(ctx, sent, s.telemetry.attrs)
	return nil
}

// processError maps the leader's answer as the collector's OTLP exporter does:
// Unavailable (a standby's answer, or no connection) and the other transient
// codes are retried, the rest are permanent.
func processError(err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	if st.Code() == codes.OK {
		return nil
	}
	var retryInfo *errdetails.RetryInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retryInfo = ri
		}
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
	case codes.ResourceExhausted:
		if retryInfo == nil {
			return consumererror.NewPermanent(err)
		}
	default:
		return consumererror.NewPermanent(err)
	}
	if d := retryInfo.GetRetryDelay().AsDuration(); d > 0 {
		return exporterhelper.NewThrottleRetry(err, d)
	}
	return err
}
