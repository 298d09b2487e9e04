package goldmanereceiver

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/receiver/goldmanereceiver/internal/metadata"
)

// fixtureAge is a start_time_gte that reaches back to the recorded fixtures.
const fixtureAge = -5 * 365 * 24 * 3600

// wantFixtureRecords are the records that the Goldmane fixture must produce.
var wantFixtureRecords = []string{
	"allowed egress source tcp shop/frontend-6d5f7b8c9-*(/) -> shop/cart-7f8e9d0c1-*(/):8080 policy=Profile//kns.shop count=4",
	"allowed ingress destination tcp shop/frontend-6d5f7b8c9-*(/) -> shop/cart-7f8e9d0c1-*(/):8080 policy=NetworkPolicy/shop/cart-ingress count=4",
	"allowed ingress destination tcp shop/cart-7f8e9d0c1-*(/) -> shop/orders-5d8f7c9b4-*(/):8080 policy=Profile//kns.shop count=2",
	"allowed ingress destination tcp shop/orders-5d8f7c9b4-*(/) -> payments/payments-*(/):9000 policy=Profile//kns.shop",
	"allowed egress source tcp shop/orders-5d8f7c9b4-*(/) -> data/postgres-*(/):5432 policy=Profile//kns.shop",
	"allowed ingress destination tcp payments/payments-*(/) -> data/postgres-*(/):5432 policy=Profile//kns.shop",
	"allowed ingress destination tcp batch/report-29000000-*(/) -> data/postgres-*(/):5432 policy=Profile//kns.shop",
	"allowed ingress destination tcp monitoring/prometheus-6b7c8d9e0-*(/) -> monitoring/node-exporter-*(/):9100 policy=Profile//kns.shop",
	"allowed egress source udp shop/frontend-6d5f7b8c9-*(/) -> kube-system/coredns-5d78c9869d-*(/):53 policy=Profile//kns.shop",
	"allowed ingress destination tcp default/debug-shell(/) -> shop/cart-7f8e9d0c1-*(/):8080 policy=Profile//kns.shop",
	"allowed ingress destination tcp network:pub -> shop/frontend-6d5f7b8c9-*(/):8080 policy=Profile//kns.shop",
	"allowed ingress destination tcp host:worker-1 -> shop/frontend-6d5f7b8c9-*(/):8080 policy=Profile//kns.shop",
	"allowed egress source tcp shop/cart-7f8e9d0c1-*(/) -> network_set:payment-gateways:443 policy=Profile//kns.shop",
	"denied ingress destination tcp default/probe-6f8d9c7b5-*(/) -> shop/orders-5d8f7c9b4-*(/):8080 policy=NetworkPolicy/shop/deployment-orders-ingress",
	"denied egress source tcp shop/cart-7f8e9d0c1-*(/) -> payments/payments-*(/):9000 policy=CalicoNetworkPolicy/shop/default.deny-cart-to-payments",
	"allowed ingress destination tcp shop/frontend-6d5f7b8c9-*(/) -> shop/orders-5d8f7c9b4-*(/):8080 policy=Profile//kns.shop pending=denied:StagedKubernetesNetworkPolicy/shop/staged-orders-ingress",
}

// mtlsSetup is a Goldmane that requires client certificates signed by its CA, and
// a receiver config with such a certificate.
func mtlsSetup(t *testing.T, g *dataplanetest.Goldmane, opts ...grpc.ServerOption) (*grpctest.Server, *Config) {
	t.Helper()
	ca := certtest.NewCA(t, "tigera-ca")
	server := ca.Server(t, "goldmane", "goldmane.calico-system.svc")
	client := ca.Client(t, "network-enforcer")
	srv := grpctest.Start(t, certtest.ServerTLS(server, ca), func(s *grpc.Server) { pb.RegisterFlowsServer(s, g) }, opts...)
	cfg := createDefaultConfig().(*Config)
	cfg.Endpoint = srv.Addr
	cfg.TLS.CAFile = ca.CertFile
	cfg.TLS.CertFile = client.CertFile
	cfg.TLS.KeyFile = client.KeyFile
	cfg.TLS.ServerName = "goldmane.calico-system.svc"
	cfg.StartTimeGte = fixtureAge
	cfg.Reconnect.InitialInterval = 20 * time.Millisecond
	cfg.Reconnect.MaxInterval = 100 * time.Millisecond
	return srv, cfg
}

func startReceiver(t *testing.T, cfg *Config) (*flowsourcetest.Harness, *goldmaneReceiver) {
	t.Helper()
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	r, err := newGoldmaneReceiver(set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	flowsourcetest.Start(t, r)
	return h, r
}

func TestFixturesArriveAsRecords(t *testing.T) {
	g := dataplanetest.NewGoldmane(loadFixtures(t))
	_, cfg := mtlsSetup(t, g)
	h, r := startReceiver(t, cfg)

	got := h.WaitRecords(t, len(wantFixtureRecords))
	if !slices.Equal(got, wantFixtureRecords) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFixtureRecords, "\n"))
	}
	// Each batch handed to the pipeline is a receive operation of the
	// collector's standard receiver telemetry, beside the receiver's counters.
	h.WaitStandard(t, r.Settings.ID, "grpc", flowsourcetest.Standard{Accepted: int64(len(wantFixtureRecords))})
	h.WaitDrops(t, map[string]int64{"unsupported_protocol": 1})
	req := g.LastRequest()
	if req.GetAggregationInterval() != 15 || req.GetStartTimeGte() != fixtureAge {
		t.Fatalf("request %v: want aggregation_interval 15 and start_time_gte %d", req, fixtureAge)
	}
}

func TestClientWithoutCertificateIsRefused(t *testing.T) {
	g := dataplanetest.NewGoldmane(loadFixtures(t))
	_, cfg := mtlsSetup(t, g)
	other := certtest.NewCA(t, "other-ca").Client(t, "intruder")
	cfg.TLS.CertFile, cfg.TLS.KeyFile = other.CertFile, other.KeyFile
	h, _ := startReceiver(t, cfg)

	// Three rounds of the reconnect loop, each a connection that failed.
	h.WaitLogs(t, "flow stream ended", 3)
	if n := h.Sink.LogRecordCount(); n != 0 || len(g.Requests()) != 0 {
		t.Fatalf("a client certificate from another CA was served: %d records, %d streams", n, len(g.Requests()))
	}
}

func TestWrongCAFailsClosed(t *testing.T) {
	g := dataplanetest.NewGoldmane(loadFixtures(t))
	_, cfg := mtlsSetup(t, g)
	cfg.TLS.CAFile = certtest.NewCA(t, "other-ca").CertFile
	h, _ := startReceiver(t, cfg)

	h.WaitLog(t, "certificate signed by unknown authority")
	if n := h.Sink.LogRecordCount(); n != 0 || len(g.Requests()) != 0 {
		t.Fatalf("%d records, %d streams through an untrusted connection", n, len(g.Requests()))
	}
}

func TestTLSClientAgainstPlaintextServerFailsClosed(t *testing.T) {
	g := dataplanetest.NewGoldmane(loadFixtures(t))
	_, cfg := mtlsSetup(t, g)
	plain := grpctest.Start(t, nil, func(s *grpc.Server) { pb.RegisterFlowsServer(s, g) })
	cfg.Endpoint = plain.Addr
	h, _ := startReceiver(t, cfg)

	// Three rounds of the reconnect loop, each a connection that failed.
	h.WaitLogs(t, "flow stream ended", 3)
	if n := h.Sink.LogRecordCount(); n != 0 || len(g.Requests()) != 0 {
		t.Fatalf("a TLS client talked plaintext: %d records, %d streams", n, len(g.Requests()))
	}
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	all := loadFixtures(t)
	g := dataplanetest.NewGoldmane(all[:5]) // buckets 0 and 1
	srv, cfg := mtlsSetup(t, g)
	h, _ := startReceiver(t, cfg)
	h.WaitRecords(t, 5)

	g.SetFlows(all)
	srv.Restart()
	<-g.Opened // the first stream
	<-g.Opened // the stream after the restart
	resumed := g.LastRequest().GetStartTimeGte()
	if want := all[4].GetFlow().GetStartTime(); resumed != want {
		t.Fatalf("re-opened at start_time_gte %d, want the newest bucket received (%d)", resumed, want)
	}
	// The newest bucket comes again (2 of its flows had arrived): nothing is lost,
	// and only that bucket repeats.
	got := h.WaitRecords(t, len(wantFixtureRecords)+2)
	for _, want := range wantFixtureRecords {
		if !slices.Contains(got, want) {
			t.Errorf("lost across the restart: %s", want)
		}
	}
	if len(got) != len(wantFixtureRecords)+2 {
		t.Errorf("%d records, want %d", len(got), len(wantFixtureRecords)+2)
	}
}

func TestStopAndStartStreaming(t *testing.T) {
	g := dataplanetest.NewGoldmane(nil)
	_, cfg := mtlsSetup(t, g)
	h, recv := startReceiver(t, cfg)
	<-g.Opened

	// StopStreaming returns once the stream is closed; the next stream is the
	// one that StartStreaming opens, and its records are the first.
	recv.StopStreaming()
	g.SetFlows(loadFixtures(t))
	if n := h.Sink.LogRecordCount(); n != 0 {
		t.Fatalf("%d records while stopped", n)
	}
	recv.StartStreaming()
	h.WaitRecords(t, len(wantFixtureRecords))
	if n := len(g.Requests()); n != 2 {
		t.Fatalf("%d streams opened, want 2: one before the stop and one after the start", n)
	}
}

func TestBadMessagesAreCountedDrops(t *testing.T) {
	fixtures := loadFixtures(t)
	unknownAction := proto.Clone(fixtures[0]).(*pb.FlowResult)
	unknownAction.GetFlow().GetKey().Action = pb.Action(7)
	unknownType := proto.Clone(fixtures[0]).(*pb.FlowResult)
	unknownType.GetFlow().GetKey().DestType = pb.EndpointType(12)
	noReporter := proto.Clone(fixtures[0]).(*pb.FlowResult)
	noReporter.GetFlow().GetKey().Reporter = pb.Reporter_ReporterUnspecified
	truncated := proto.Clone(fixtures[1]).(*pb.FlowResult)
	truncated.Id = 666
	g := dataplanetest.NewGoldmane([]*pb.FlowResult{unknownAction, unknownType, noReporter, truncated})
	_, cfg := mtlsSetup(t, g, grpctest.TruncateMessages(func(m proto.Message) bool {
		res, ok := m.(*pb.FlowResult)
		return ok && res.GetId() == 666
	}))
	h, _ := startReceiver(t, cfg)

	h.WaitLog(t, "unmarshal")
	h.WaitDrops(t, map[string]int64{"unknown_enum": 2, "malformed": 2})
	if n := h.Sink.LogRecordCount(); n != 0 {
		t.Fatalf("%d records from bad messages", n)
	}
}
