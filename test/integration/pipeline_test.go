package integration

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/fakeflows"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/internal/testcerts"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver"
	pb "github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/goldmanepb"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver"
	"github.com/kubewarden/network-enforcer/receiver/ztunnelreceiver"
)

// host is a collector host with the enforcer extension.
type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

// pipeline is the learning path, in process: the enforcer extension, flow
// receivers gated by its leadership, the learning processor and the writer.
type pipeline struct {
	// ztunnelAddr is the OTLP/gRPC address of the ztunnel receiver, when it runs.
	ztunnelAddr string

	tel        *componenttest.Telemetry
	enforcer   enforcerextension.Enforcer
	components []component.Component // in start order
}

// sources are the data planes a pipeline reads.
type sources struct {
	hubble, goldmane, ztunnel bool
}

var enforcerID = component.NewID(enforcerextension.Type)

// startPipeline starts a pipeline whose receivers replay the fixtures from fake
// data plane servers over TLS (mutual TLS for Goldmane).
func startPipeline(t *testing.T, src sources) *pipeline {
	t.Helper()
	ctx := context.Background()
	p := &pipeline{tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { _ = p.tel.Shutdown(ctx) })
	tset := p.tel.NewTelemetrySettings()
	tset.Logger = zap.NewNop()
	build := component.NewDefaultBuildInfo()

	ecfg := enforcerextension.NewFactory().CreateDefaultConfig().(*enforcerextension.Config)
	ecfg.AuthType = enforcerextension.AuthTypeKubeConfig
	ecfg.LeaderElection.LeaseNamespace = "default"
	ecfg.LeaderElection.LeaseName = "integration"
	ecfg.LeaderElection.LeaseDuration, ecfg.LeaderElection.RenewDeadline, ecfg.LeaderElection.RetryPeriod =
		3*time.Second, 2*time.Second, 200*time.Millisecond
	ext, err := enforcerextension.NewFactory().Create(ctx, extension.Settings{ID: enforcerID, TelemetrySettings: tset, BuildInfo: build}, ecfg)
	must(t, err)
	h := host{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{enforcerID: ext}}
	p.enforcer = ext.(enforcerextension.Enforcer)

	wf := k8swriterexporter.NewFactory()
	writer, err := wf.CreateLogs(ctx, exporter.Settings{ID: component.NewID(wf.Type()), TelemetrySettings: tset, BuildInfo: build}, wf.CreateDefaultConfig())
	must(t, err)
	pf := learningprocessor.NewFactory()
	proc, err := pf.CreateLogs(ctx, processor.Settings{ID: component.NewID(pf.Type()), TelemetrySettings: tset, BuildInfo: build}, pf.CreateDefaultConfig(), writer)
	must(t, err)
	p.components = []component.Component{ext, writer, proc}

	ca := testcerts.NewCA(t, "cluster-ca")
	if src.hubble {
		p.components = append(p.components, hubbleReceiver(t, ca, tset, proc))
	}
	if src.goldmane {
		p.components = append(p.components, goldmaneReceiver(t, ca, tset, proc))
	}
	if src.ztunnel {
		r, addr := ztunnelReceiver(t, tset, proc)
		p.components, p.ztunnelAddr = append(p.components, r), addr
	}
	for _, c := range p.components {
		must(t, c.Start(ctx, h))
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop shuts the components down in reverse order; a second call does nothing.
func (p *pipeline) stop(t *testing.T) {
	for i := len(p.components) - 1; i >= 0; i-- {
		if err := p.components[i].Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	p.components = nil
}

func hubbleReceiver(t *testing.T, ca *testcerts.CA, tset component.TelemetrySettings, next consumer.Logs) receiver.Logs {
	flows, err := fakeflows.LoadHubble(repoFile(t, fakeflows.HubbleFixture))
	must(t, err)
	relay := grpctest.Start(t, testcerts.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, fakeflows.NewHubbleRelay(flows)) })
	f := hubblereceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*hubblereceiver.Config)
	cfg.Endpoint = relay.Addr
	cfg.TLS.CAFile = ca.CertFile
	cfg.TLS.ServerName = "ui.hubble-relay.cilium.io"
	cfg.Backfill.Since = 100 * 365 * 24 * time.Hour // the fixtures' flows are old
	cfg.Enforcer = &enforcerID
	r, err := f.CreateLogs(context.Background(), receiver.Settings{ID: component.NewID(f.Type()), TelemetrySettings: tset,
		BuildInfo: component.NewDefaultBuildInfo()}, cfg, next)
	must(t, err)
	return r
}

func goldmaneReceiver(t *testing.T, ca *testcerts.CA, tset component.TelemetrySettings, next consumer.Logs) receiver.Logs {
	flows, err := fakeflows.LoadGoldmane(repoFile(t, fakeflows.GoldmaneFixture))
	must(t, err)
	srv := grpctest.Start(t, testcerts.ServerTLS(ca.Server(t, "goldmane", "goldmane.calico-system.svc"), ca),
		func(s *grpc.Server) { pb.RegisterFlowsServer(s, fakeflows.NewGoldmane(flows)) })
	client := ca.Client(t, "network-enforcer")
	f := goldmanereceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*goldmanereceiver.Config)
	cfg.Endpoint = srv.Addr
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = ca.CertFile, client.CertFile, client.KeyFile
	cfg.TLS.ServerName = "goldmane.calico-system.svc"
	cfg.StartTimeGte = -100 * 365 * 24 * 3600
	cfg.Enforcer = &enforcerID
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

// counter sums a counter of the pipeline's telemetry, with the attributes given.
func (p *pipeline) counter(name string, attrs map[string]string) int64 {
	m, err := p.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		ok := true
		for k, v := range attrs {
			got, _ := dp.Attributes.Value(attributeKey(k))
			ok = ok && got.AsString() == v
		}
		if ok {
			n += dp.Value
		}
	}
	return n
}

// settled waits until the counter has not changed for quiet, and returns it.
func (p *pipeline) settled(t *testing.T, name string, quiet time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	last, since := p.counter(name, nil), time.Now()
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("%s never settled", name)
		}
		time.Sleep(50 * time.Millisecond)
		if n := p.counter(name, nil); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
