package integration

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver"
	"github.com/kubewarden/network-enforcer/test/pipelinetest"
)

// pipeline is the learning path with flow receivers gated by the enforcer's
// leadership, in process.
type pipeline struct {
	*pipelinetest.Learning
	// ztunnelAddr is the OTLP/gRPC address of the ztunnel receiver, when it runs.
	ztunnelAddr string
}

// sources are the data planes a pipeline reads.
type sources struct {
	hubble, goldmane, ztunnel bool
}

var electorID = pipelinetest.ElectorID

// startPipeline starts a pipeline whose receivers replay the fixtures from fake
// data plane servers over TLS (mutual TLS for Goldmane).
func startPipeline(t *testing.T, src sources) *pipeline {
	t.Helper()
	p := &pipeline{Learning: pipelinetest.StartLearning(t)}
	ca := certtest.NewCA(t, "cluster-ca")
	if src.hubble {
		p.Add(t, hubbleReceiver(t, ca, p.Settings, p.Processor))
	}
	if src.goldmane {
		p.Add(t, goldmaneReceiver(t, ca, p.Settings, p.Processor))
	}
	if src.ztunnel {
		r, addr := ztunnelReceiver(t, p.Settings, p.Processor)
		p.ztunnelAddr = addr
		p.Add(t, r)
	}
	return p
}

func hubbleReceiver(t *testing.T, ca *certtest.CA, tset component.TelemetrySettings, next consumer.Logs) receiver.Logs {
	flows, err := dataplanetest.LoadHubble(repoFile(t, dataplanetest.HubbleFixture))
	must(t, err)
	return relayReceiver(t, ca, dataplanetest.NewHubbleRelay(flows), tset, next)
}

// relayReceiver is a Hubble receiver of relay, which a test relay serves over
// TLS.
func relayReceiver(t *testing.T, ca *certtest.CA, served *dataplanetest.HubbleRelay, tset component.TelemetrySettings, next consumer.Logs) receiver.Logs {
	relay := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, served) })
	f := hubblereceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*hubblereceiver.Config)
	relayCfg := cfg.Relay.GetOrInsertDefault()
	relayCfg.Endpoint = relay.Addr
	relayCfg.TLS.CAFile = ca.CertFile
	relayCfg.TLS.ServerName = "ui.hubble-relay.cilium.io"
	cfg.Backfill.Since = 100 * 365 * 24 * time.Hour // the fixtures' flows are old
	cfg.LeaderElector = &electorID
	r, err := f.CreateLogs(context.Background(), receiver.Settings{ID: component.NewID(f.Type()), TelemetrySettings: tset,
		BuildInfo: component.NewDefaultBuildInfo()}, cfg, next)
	must(t, err)
	return r
}

func goldmaneReceiver(t *testing.T, ca *certtest.CA, tset component.TelemetrySettings, next consumer.Logs) receiver.Logs {
	flows, err := dataplanetest.LoadGoldmane(repoFile(t, dataplanetest.GoldmaneFixture))
	must(t, err)
	srv := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "goldmane", "goldmane.calico-system.svc"), ca),
		func(s *grpc.Server) { pb.RegisterFlowsServer(s, dataplanetest.NewGoldmane(flows)) })
	client := ca.Client(t, "network-enforcer")
	f := goldmanereceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*goldmanereceiver.Config)
	cfg.Endpoint = srv.Addr
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = ca.CertFile, client.CertFile, client.KeyFile
	cfg.TLS.ServerName = "goldmane.calico-system.svc"
	cfg.StartTimeGte = -100 * 365 * 24 * 3600
	cfg.LeaderElector = &electorID
	r, err := f.CreateLogs(context.Background(), receiver.Settings{ID: component.NewID(f.Type()), TelemetrySettings: tset,
		BuildInfo: component.NewDefaultBuildInfo()}, cfg, next)
	must(t, err)
	return r
}

// ztunnelReceiver listens for OTLP on a free loopback port, in plaintext: the
// test's client is on the same host.
func ztunnelReceiver(t *testing.T, tset component.TelemetrySettings, next consumer.Logs) (receiver.Logs, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	must(t, l.Close())
	f := ztunnelreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*ztunnelreceiver.Config)
	g := cfg.Protocols.GRPC.GetOrInsertDefault()
	g.NetAddr.Endpoint = addr
	cfg.JoinWindow = 200 * time.Millisecond
	r, err := f.CreateLogs(context.Background(), receiver.Settings{ID: component.NewID(f.Type()), TelemetrySettings: tset,
		BuildInfo: component.NewDefaultBuildInfo()}, cfg, next)
	must(t, err)
	return r, addr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
