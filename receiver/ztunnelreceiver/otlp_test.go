package ztunnelreceiver

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver/internal/metadata"
)

// otlpEnv is a receiver listening on OTLP/gRPC and OTLP/HTTP with TLS that
// requires a client certificate, and a client's TLS settings.
type otlpEnv struct {
	h                  *flowsourcetest.Harness
	id                 component.ID
	grpcAddr, httpAddr string
	client             *tls.Config
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startOTLP(t *testing.T) *otlpEnv {
	t.Helper()
	return startOTLPOn(t, componenttest.NewNopHost(), nil)
}

// startOTLPOn starts the receiver as startOTLP does, on host, with the
// configuration that configure changes, when not nil.
func startOTLPOn(t *testing.T, host component.Host, configure func(*Config)) *otlpEnv {
	t.Helper()
	ca := certtest.NewCA(t, "otlp")
	server := ca.Server(t, "ztunnel-receiver")
	client := ca.Client(t, "fluent-bit")

	// A port that freeAddr found free may be taken by another process before
	// the receiver listens on it: the receiver then starts on new ones.
	for attempt := 1; ; attempt++ {
		e, err := tryStartOTLP(t, host, configure, ca, server, client)
		if err == nil {
			return e
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; on other ports", attempt, err)
	}
}

// tryStartOTLP starts the receiver on two ports that were free a moment ago.
func tryStartOTLP(t *testing.T, host component.Host, configure func(*Config), ca *certtest.CA, server, client certtest.Pair) (*otlpEnv, error) {
	t.Helper()
	tlsCfg := configtls.NewDefaultServerConfig()
	tlsCfg.CertFile, tlsCfg.KeyFile, tlsCfg.ClientCAFile = server.CertFile, server.KeyFile, ca.CertFile
	e := &otlpEnv{grpcAddr: freeAddr(t), httpAddr: freeAddr(t), client: &tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS}, MinVersion: tls.VersionTLS12,
	}}
	cfg := createDefaultConfig().(*Config)
	cfg.JoinWindow = testWindow
	g := cfg.Protocols.GRPC.GetOrInsertDefault()
	g.NetAddr.Endpoint, g.TLS = e.grpcAddr, configoptional.Some(tlsCfg)
	h := cfg.Protocols.HTTP.GetOrInsertDefault()
	h.NetAddr.Endpoint, h.TLS = e.httpAddr, configoptional.Some(tlsCfg)
	if configure != nil {
		configure(cfg)
	}

	set, harness := flowsourcetest.NewHarness(t, metadata.Type)
	r, err := NewFactory().CreateLogs(context.Background(), set, cfg, harness.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), host); err != nil {
		_ = r.Shutdown(context.Background()) // the listener that did open
		return nil, err
	}
	t.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	e.h, e.id = harness, set.ID
	return e, nil
}

// sendGRPC exports ld as fluent-bit's OTLP/gRPC output does.
func (e *otlpEnv) sendGRPC(t *testing.T, ld plog.Logs) error {
	t.Helper()
	conn, err := grpc.NewClient(e.grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(e.client)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}

// sendHTTP posts ld as protobuf to /v1/logs, as fluent-bit's OTLP/HTTP output does.
func (e *otlpEnv) sendHTTP(t *testing.T, ld plog.Logs) error {
	t.Helper()
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: e.client}, Timeout: 10 * time.Second}
	resp, err := c.Post("https://"+e.httpAddr+"/v1/logs", "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// The body shapes that fluent-bit's opentelemetry output sends, each made from
// the fixture's lines; a line that is not JSON is sent as it is in every shape.
var bodyShapes = map[string]func(t *testing.T, lines []string) plog.Logs{
	"whole line": func(_ *testing.T, lines []string) plog.Logs {
		return logsOf(lines, func(l string, lr plog.LogRecord) { lr.Body().SetStr(l) })
	},
	"whole line with CRI prefix and partial lines": func(_ *testing.T, lines []string) plog.Logs {
		cri := splitLines(dataplanetest.CRI(lines, time.Now(), 200))
		return logsOf(cri, func(l string, lr plog.LogRecord) {
			lr.Body().SetStr(l)
			lr.Attributes().PutStr("log.file.path", "/var/log/pods/istio-system_ztunnel-a_1/istio-proxy/0.log")
		})
	},
	"message body, fields as attributes": func(t *testing.T, lines []string) plog.Logs {
		return logsOf(lines, func(l string, lr plog.LogRecord) {
			fields, ok := jsonFields(l)
			if !ok {
				lr.Body().SetStr(l)
				return
			}
			lr.Body().SetStr(fields["message"].(string))
			delete(fields, "message")
			if err := lr.Attributes().FromRaw(fields); err != nil {
				t.Fatal(err)
			}
		})
	},
	"kvlist body": func(t *testing.T, lines []string) plog.Logs {
		return logsOf(lines, func(l string, lr plog.LogRecord) {
			fields, ok := jsonFields(l)
			if !ok {
				lr.Body().SetStr(l)
				return
			}
			if err := lr.Body().SetEmptyMap().FromRaw(fields); err != nil {
				t.Fatal(err)
			}
		})
	},
}

func logsOf(lines []string, fill func(string, plog.LogRecord)) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, l := range lines {
		lr := lrs.AppendEmpty()
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(time.Now()))
		fill(l, lr)
	}
	return ld
}

func jsonFields(l string) (map[string]any, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return nil, false
	}
	return m, true
}

func TestOTLPBodyShapesOverGRPCAndHTTPWithClientCertificates(t *testing.T) {
	fixture := loadFixture(t)
	for shape, build := range bodyShapes {
		for _, transport := range []string{"grpc", "http"} {
			t.Run(transport+"/"+shape, func(t *testing.T) {
				e := startOTLP(t)
				ld := build(t, fixture)
				send := e.sendGRPC
				if transport == "http" {
					send = e.sendHTTP
				}
				if err := send(t, ld); err != nil {
					t.Fatal(err)
				}
				checkFixtureOutput(t, e.h)
				// The records, joined at once or later, count on the
				// listener that took their lines.
				e.h.WaitStandard(t, e.id, transport, flowsourcetest.Standard{Accepted: int64(len(fixtureRecords))})
			})
		}
	}
}

func TestOTLPRefusesClientsWithoutCertificate(t *testing.T) {
	e := startOTLP(t)
	e.client = &tls.Config{RootCAs: e.client.RootCAs, MinVersion: tls.VersionTLS12}
	ld := bodyShapes["whole line"](t, loadFixture(t))
	if err := e.sendGRPC(t, ld); err == nil {
		t.Error("gRPC export without a client certificate succeeded")
	}
	if err := e.sendHTTP(t, ld); err == nil {
		t.Error("HTTP export without a client certificate succeeded")
	}
	if n := e.h.Sink.LogRecordCount(); n != 0 {
		t.Fatalf("%d records from an unauthenticated client", n)
	}
}

// TestOTLPPassesNodeAgentRecordsThrough: records that this binary's node agent
// already made arrive unchanged.
func TestOTLPPassesNodeAgentRecordsThrough(t *testing.T) {
	e := startOTLP(t)
	rec := flow.Record{
		Time: time.Now().UTC(), Provider: flow.ProviderIstio, Outcome: flow.OutcomeAllowed,
		Reporter: flow.ReporterDestination, Direction: flow.DirectionIngress, Transport: flow.TransportTCP,
		Source:      flow.Endpoint{Address: "10.0.0.1", Port: 4000, Namespace: "a", Pod: "a-1", Identity: "cluster.local/ns/a/sa/a"},
		Destination: flow.Endpoint{Address: "10.0.0.2", Port: 80, Namespace: "b", Pod: "b-1"},
		Count:       1,
	}
	ld := plog.NewLogs()
	rec.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	if err := e.sendGRPC(t, ld); err != nil {
		t.Fatal(err)
	}
	got := e.h.WaitRecords(t, 1)
	if want := flowsourcetest.Describe(rec); len(got) != 1 || got[0] != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	if !strings.Contains(fmt.Sprint(e.h.Sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Attributes().AsRaw()), "cluster.local/ns/a/sa/a") {
		t.Fatal("identity lost")
	}
}

// TestOTLPStandbyRefusesAndCounts: while the replica is a standby, each OTLP
// request is answered with a retryable error (gRPC Unavailable, HTTP 503) and
// counted as refused in the collector's standard receiver telemetry, on the
// listener's transport; once it leads, the records are accepted.
func TestOTLPStandbyRefusesAndCounts(t *testing.T) {
	enforcer := enforcerextensiontest.New()
	id := component.MustNewID("leader_elector")
	e := startOTLPOn(t, enforcer.Host(id), func(cfg *Config) { cfg.LeaderElector = &id })
	ld := bodyShapes["whole line"](t, loadFixture(t))
	n := int64(ld.LogRecordCount())

	if err := e.sendGRPC(t, ld); status.Code(err) != codes.Unavailable {
		t.Errorf("the standby answered gRPC with %v, want Unavailable", err)
	}
	if err := e.sendHTTP(t, ld); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("the standby answered HTTP with %v, want 503", err)
	}
	for _, transport := range []string{"grpc", "http"} {
		e.h.WaitStandard(t, e.id, transport, flowsourcetest.Standard{Refused: n})
	}
	if got := counterSum(t, e.h, "network_enforcer_receiver_refused_standby"); got != 2*n {
		t.Errorf("refused_standby %d, want %d", got, 2*n)
	}

	enforcer.Lead()
	if err := e.sendGRPC(t, ld); err != nil {
		t.Fatal(err)
	}
	checkFixtureOutput(t, e.h)
	e.h.WaitStandard(t, e.id, "grpc", flowsourcetest.Standard{Accepted: int64(len(fixtureRecords)), Refused: n})
}

// TestOTLPStandbyRefusalIsAFailureWithTheNewReceiverMetrics: with the
// collector's receiverhelper.newReceiverMetrics gate, an error of the receiver
// itself (not of the pipeline after it) counts as failed, not refused.
func TestOTLPStandbyRefusalIsAFailureWithTheNewReceiverMetrics(t *testing.T) {
	gate := receiverhelper.NewReceiverMetricsGate
	if err := featuregate.GlobalRegistry().Set(gate.ID(), true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = featuregate.GlobalRegistry().Set(gate.ID(), false) })
	enforcer := enforcerextensiontest.New()
	id := component.MustNewID("leader_elector")
	e := startOTLPOn(t, enforcer.Host(id), func(cfg *Config) { cfg.LeaderElector = &id })
	ld := bodyShapes["whole line"](t, loadFixture(t))
	if err := e.sendHTTP(t, ld); err == nil {
		t.Fatal("the standby took the records")
	}
	e.h.WaitStandard(t, e.id, "http", flowsourcetest.Standard{Failed: int64(ld.LogRecordCount())})
}
