package hubblereceiver

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"github.com/cilium/cilium/api/v1/observer"
	relaypb "github.com/cilium/cilium/api/v1/relay"
	"go.opentelemetry.io/collector/component"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// startReceiver starts a receiver with cfg, reporting into a harness.
func startReceiver(t *testing.T, cfg *Config) (*flowsourcetest.Harness, *hubbleReceiver) {
	t.Helper()
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	r, err := newHubbleReceiver(set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	flowsourcetest.Start(t, r)
	return h, r
}

// wantFixtureRecords are the records that the Hubble fixture must produce, one
// line each: outcome direction reporter transport, source -> destination:port,
// and the policy named.
var wantFixtureRecords = []string{
	"allowed egress source tcp shop/frontend-6d5f7b8c9-abcde(Deployment/frontend) -> shop/cart-7f8e9d0c1-fghij(Deployment/cart):8080 policy=",
	"allowed ingress destination tcp shop/frontend-6d5f7b8c9-abcde(Deployment/frontend) -> shop/cart-7f8e9d0c1-fghij(Deployment/cart):8080 policy=CiliumNetworkPolicy/shop/cart-ingress",
	"allowed ingress destination tcp shop/cart-7f8e9d0c1-fghij(Deployment/cart) -> shop/orders-5d8f7c9b4-qw7lm(Deployment/orders):8080 policy=",
	"allowed ingress destination tcp shop/orders-5d8f7c9b4-qw7lm(Deployment/orders) -> payments/payments-0(StatefulSet/payments):9000 policy=",
	"allowed egress source tcp shop/orders-5d8f7c9b4-qw7lm(Deployment/orders) -> data/postgres-0(StatefulSet/postgres):5432 policy=",
	"allowed ingress destination tcp payments/payments-0(StatefulSet/payments) -> data/postgres-0(StatefulSet/postgres):5432 policy=",
	"allowed ingress destination tcp batch/report-29000000-kq8zn(CronJob/report) -> data/postgres-0(StatefulSet/postgres):5432 policy=",
	"allowed ingress destination tcp monitoring/prometheus-6b7c8d9e0-lmnop(Deployment/prometheus) -> monitoring/node-exporter-x7k2p(DaemonSet/node-exporter):9100 policy=",
	"allowed egress source udp shop/frontend-6d5f7b8c9-abcde(Deployment/frontend) -> kube-system/coredns-5d78c9869d-qrstu(Deployment/coredns):53 policy=",
	"allowed ingress destination tcp world:203.0.113.7 -> shop/frontend-6d5f7b8c9-abcde(Deployment/frontend):8080 policy=",
	"allowed ingress destination tcp host:192.168.1.10 -> shop/frontend-6d5f7b8c9-abcde(Deployment/frontend):8080 policy=",
	"allowed egress source tcp shop/cart-7f8e9d0c1-fghij(Deployment/cart) -> world:198.51.100.20:443 policy=",
	"denied ingress destination tcp default/probe-6f8d9c7b5-vwxyz(Deployment/probe) -> shop/orders-5d8f7c9b4-qw7lm(Deployment/orders):8080 policy=NetworkPolicy/shop/deployment-orders-ingress",
	"denied egress source tcp shop/cart-7f8e9d0c1-fghij(Deployment/cart) -> payments/payments-0(StatefulSet/payments):9000 policy=CiliumNetworkPolicy/shop/deny-cart-to-payments",
}

// fixtureAge is a backfill period that reaches back to the recorded fixtures.
const fixtureAge = 5 * 365 * 24 * time.Hour

// wantFixtureDrops are the fixture's messages that produce no record, by reason.
var wantFixtureDrops = map[string]int64{"reply": 1, "no_policy_verdict": 1, "unsupported_protocol": 1, "not_l3_l4": 1}

// tlsSetup is a relay with a server certificate and required client certificates,
// and a receiver config that trusts it.
func tlsSetup(t *testing.T, relay *dataplanetest.HubbleRelay, opts ...grpc.ServerOption) (*grpctest.Server, *Config) {
	t.Helper()
	ca := certtest.NewCA(t, "cilium-ca")
	server := ca.Server(t, "relay", "ui.hubble-relay.cilium.io")
	client := ca.Client(t, "hubble-relay-client")
	srv := grpctest.Start(t, certtest.ServerTLS(server, ca), func(s *grpc.Server) {
		observer.RegisterObserverServer(s, relay)
	}, opts...)
	cfg := createDefaultConfig().(*Config)
	relayCfg := cfg.Relay.GetOrInsertDefault()
	relayCfg.Endpoint = srv.Addr
	relayCfg.TLS.CAFile = ca.CertFile
	relayCfg.TLS.CertFile = client.CertFile
	relayCfg.TLS.KeyFile = client.KeyFile
	relayCfg.TLS.ServerName = "ui.hubble-relay.cilium.io"
	cfg.Reconnect.InitialInterval = 20 * time.Millisecond
	cfg.Reconnect.MaxInterval = 100 * time.Millisecond
	cfg.Backfill.Since = fixtureAge
	return srv, cfg
}

func TestFixturesArriveAsRecords(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(loadFixtures(t))
	_, cfg := tlsSetup(t, relay)
	h, r := startReceiver(t, cfg)

	got := h.WaitRecords(t, len(wantFixtureRecords))
	if !slices.Equal(got, wantFixtureRecords) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantFixtureRecords, "\n"))
	}
	// Each batch handed to the pipeline is a receive operation of the
	// collector's standard receiver telemetry, beside the receiver's counters.
	h.WaitStandard(t, r.Settings.ID, "grpc", flowsourcetest.Standard{Accepted: int64(len(wantFixtureRecords))})
	// The relay's lost-event notice is a gap of the node that it names. It
	// follows the fixture's last flow: in a batch of its own when the flows'
	// batch left first.
	var gaps []string
	waitFor(t, "the gap record", func() bool {
		gaps = h.Gaps()
		return len(gaps) > 0
	})
	if !slices.Equal(gaps, []string{"lost_events worker-2 17"}) {
		t.Errorf("gaps %q, want the lost events of worker-2", gaps)
	}
	counts := flowsourcetest.Read(h.Tel)
	if counts.Accepted != int64(len(wantFixtureRecords)) || counts.Lost != 17 {
		t.Errorf("accepted %d lost %d, want %d and 17", counts.Accepted, counts.Lost, len(wantFixtureRecords))
	}
	for reason, n := range wantFixtureDrops {
		if counts.Dropped[reason] != n {
			t.Errorf("dropped %s = %d, want %d (all: %v)", reason, counts.Dropped[reason], n, counts.Dropped)
		}
	}
	req := relay.LastRequest()
	if !req.GetFollow() || req.GetSince() == nil {
		t.Errorf("request %v: want follow with since (backfill)", req)
	}
	if !slices.Equal(req.GetFieldMask().GetPaths(), fieldMaskPaths) {
		t.Errorf("field mask %v, want the fields the receiver reads by default", req.GetFieldMask())
	}
}

func TestBackfillByNumberAndOff(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(loadFixtures(t))
	_, cfg := tlsSetup(t, relay)
	cfg.Backfill.Number = 4
	_, recv := startReceiver(t, cfg)
	<-relay.Opened
	if req := relay.LastRequest(); req.GetNumber() != 4 || req.GetSince() != nil {
		t.Fatalf("request %v: want number 4 and no since", req)
	}
	recv.StopStreaming()

	// A fresh receiver: a re-opened stream of the first one resumes after the
	// newest flow it received, whatever the backfill.
	relay = dataplanetest.NewHubbleRelay(loadFixtures(t))
	_, cfg = tlsSetup(t, relay)
	cfg.Backfill = BackfillConfig{Enabled: false}
	cfg.Relay.Get().FieldMask = false
	before := time.Now()
	startReceiver(t, cfg)
	<-relay.Opened
	if since := relay.LastRequest().GetSince(); since == nil || since.AsTime().Before(before.Add(-time.Second)) {
		t.Fatalf("backfill off: since %v, want about now", since)
	}
	if mask := relay.LastRequest().GetFieldMask(); mask != nil {
		t.Fatalf("field_mask: false asked for %v, want whole flows", mask)
	}
}

func TestWrongCAFailsClosed(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(loadFixtures(t))
	_, cfg := tlsSetup(t, relay)
	cfg.Relay.Get().TLS.CAFile = certtest.NewCA(t, "other-ca").CertFile
	h, _ := startReceiver(t, cfg)

	h.WaitLog(t, "certificate signed by unknown authority")
	if n := h.FlowCount(); n != 0 {
		t.Fatalf("%d records through an untrusted connection", n)
	}
	// A relay never read is no gap: nothing is being learned yet.
	if gaps := h.Gaps(); len(gaps) != 0 {
		t.Fatalf("gaps %q before any flow was read", gaps)
	}
	if len(relay.Requests()) != 0 {
		t.Fatal("the relay served a stream to a client that does not trust it")
	}
}

func TestTLSClientAgainstPlaintextServerFailsClosed(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(loadFixtures(t))
	srv := grpctest.Start(t, nil, func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) })
	cfg := createDefaultConfig().(*Config)
	cfg.Relay.GetOrInsertDefault().Endpoint = srv.Addr
	cfg.Relay.Get().TLS.CAFile = certtest.NewCA(t, "cilium-ca").CertFile
	cfg.Reconnect.InitialInterval = 20 * time.Millisecond
	h, _ := startReceiver(t, cfg)

	// Three rounds of the reconnect loop, each a connection that failed.
	h.WaitLogs(t, "flow stream ended", 3)
	if n := h.FlowCount(); n != 0 || len(relay.Requests()) != 0 {
		t.Fatalf("a TLS client talked plaintext: %d records, %d streams", n, len(relay.Requests()))
	}
}

func TestPlaintextOnlyWhenInsecure(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(loadFixtures(t))
	srv := grpctest.Start(t, nil, func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) })
	cfg := createDefaultConfig().(*Config)
	cfg.Relay.GetOrInsertDefault().Endpoint = srv.Addr
	cfg.Relay.Get().TLS.Insecure = true
	cfg.Backfill.Since = fixtureAge
	h, _ := startReceiver(t, cfg)
	h.WaitRecords(t, len(wantFixtureRecords))
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	all := loadFixtures(t)
	relay := dataplanetest.NewHubbleRelay(all[:8])
	srv, cfg := tlsSetup(t, relay)
	h, _ := startReceiver(t, cfg)
	h.WaitRecords(t, 7) // the first 8 lines hold 7 records and a reply

	relay.SetResponses(all)
	srv.Restart()
	got := h.WaitRecords(t, len(wantFixtureRecords))
	if !slices.Equal(got, wantFixtureRecords) {
		t.Fatalf("after a restart, records:\n%s\nwant each once:\n%s", strings.Join(got, "\n"), strings.Join(wantFixtureRecords, "\n"))
	}
	resumed := relay.LastRequest().GetSince().AsTime()
	if want := all[7].GetFlow().GetTime().AsTime(); !resumed.After(want) {
		t.Fatalf("re-opened since %v, want after the last flow received (%v)", resumed, want)
	}
}

func TestStopAndStartStreaming(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(nil)
	_, cfg := tlsSetup(t, relay)
	h, recv := startReceiver(t, cfg)
	<-relay.Opened

	// StopStreaming returns once the stream is closed; the next stream is the
	// one that StartStreaming opens, and its records are the first.
	recv.StopStreaming()
	relay.SetResponses(loadFixtures(t))
	if n := h.Sink.LogRecordCount(); n != 0 {
		t.Fatalf("%d records while stopped", n)
	}
	recv.StartStreaming()
	h.WaitRecords(t, len(wantFixtureRecords))
	if n := len(relay.Requests()); n != 2 {
		t.Fatalf("%d streams opened, want 2: one before the stop and one after the start", n)
	}
}

func TestBadMessagesAreCountedDrops(t *testing.T) {
	fixtures := loadFixtures(t)
	unknownVerdict := proto.Clone(fixtures[0]).(*observer.GetFlowsResponse)
	unknownVerdict.GetFlow().Verdict = flowpb.Verdict(99)
	unknownDirection := proto.Clone(fixtures[0]).(*observer.GetFlowsResponse)
	unknownDirection.GetFlow().TrafficDirection = flowpb.TrafficDirection(42)
	truncated := proto.Clone(fixtures[1]).(*observer.GetFlowsResponse)
	// Hubble names a response's node after its flow's, the one that a field
	// mask keeps.
	truncated.NodeName = "truncate-me"
	truncated.GetFlow().NodeName = "truncate-me"
	truncated.GetFlow().Time = timestamppb.New(fixtures[1].GetFlow().GetTime().AsTime().Add(-time.Millisecond))
	relay := dataplanetest.NewHubbleRelay([]*observer.GetFlowsResponse{unknownVerdict, unknownDirection, truncated, fixtures[3]})
	_, cfg := tlsSetup(t, relay, grpctest.TruncateMessages(func(m proto.Message) bool {
		resp, ok := m.(*observer.GetFlowsResponse)
		return ok && resp.GetNodeName() == "truncate-me"
	}))
	h, _ := startReceiver(t, cfg)

	h.WaitLog(t, "unmarshal")
	h.WaitDrops(t, map[string]int64{"unknown_enum": 2, "malformed": 1})
	if n := h.FlowCount(); n != 0 {
		t.Fatalf("%d records from bad messages", n)
	}
	// The undecodable message broke the stream once flows were read: what
	// came after it on the relay's side may be lost, on any node.
	waitFor(t, "a gap of every node", func() bool { return slices.Contains(h.Gaps(), "node_unreadable  0") })
}

// TestNodeErrorsAreCounted: the relay's word that it cannot read a node (its
// agent restarting) is logged and counted, and flows after it still arrive.
func TestNodeErrorsAreCounted(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(nil)
	_, cfg := tlsSetup(t, relay)
	h, _ := startReceiver(t, cfg)
	<-relay.Opened

	status := func(state relaypb.NodeState, nodes ...string) *observer.GetFlowsResponse {
		return &observer.GetFlowsResponse{Time: timestamppb.Now(), ResponseTypes: &observer.GetFlowsResponse_NodeStatus{
			NodeStatus: &relaypb.NodeStatusEvent{StateChange: state, NodeNames: nodes, Message: "connection refused"}}}
	}
	relay.Push(status(relaypb.NodeState_NODE_ERROR, "worker-1"), status(relaypb.NodeState_NODE_UNAVAILABLE, "worker-2", "worker-3"),
		status(relaypb.NodeState_NODE_CONNECTED, "worker-1"))
	relay.Push(loadFixtures(t)...)
	h.WaitRecords(t, len(wantFixtureRecords))
	h.WaitLog(t, "Hubble Relay cannot read nodes")
	if n := flowsourcetest.Read(h.Tel).NodeErrors; n != 3 {
		t.Fatalf("node errors %d, want 3 (worker-1, worker-2 and worker-3)", n)
	}
	// Each node that the relay could not read is a gap of that node; one
	// that connects again is none. The fixture's lost events follow, after
	// its last flow: in a batch of their own when the flows' batch left first.
	want := []string{"node_unreadable worker-1 0", "node_unreadable worker-2 0", "node_unreadable worker-3 0",
		"lost_events worker-2 17"}
	var gaps []string
	waitFor(t, "four gap records", func() bool {
		gaps = h.Gaps()
		return len(gaps) >= len(want)
	})
	if !slices.Equal(gaps, want) {
		t.Fatalf("gaps %q, want %q", gaps, want)
	}
}

// TestHandOffBetweenLeaders: a new leader's stream starts two connection
// periods before the newest flow that the previous leader wrote (its
// hand-off): the flows up to it are read only to know the connections that
// leader counted, so that a connection whose events go on after the hand-off
// is not counted again; a connection after it is. On shutdown the receiver
// reports the newest flow it handed on.
func TestHandOffBetweenLeaders(t *testing.T) {
	client := dataplanetest.End{Namespace: "shop", Pod: "frontend-6d5f7b8c9-abcde", IP: "10.0.0.1", Workload: "frontend", Identity: 1001}
	server := dataplanetest.End{Namespace: "shop", Pod: "cart-7f8e9d0c1-fghij", IP: "10.0.0.2", Workload: "cart", Identity: 1002}
	straddling := dataplanetest.NewHubbleConnection(client, server, 40001, 8080, dataplanetest.ConnectionUnenforced)
	next := dataplanetest.NewHubbleConnection(client, server, 40002, 8080, dataplanetest.ConnectionUnenforced)
	relay := dataplanetest.NewHubbleRelay(append(slices.Clone(straddling), next...))
	// The previous leader wrote up to the straddling connection's first
	// trace after the handshake began: it counted that connection.
	handed := straddling[2].GetFlow().GetTime().AsTime()
	h, r, e := startHandedOver(t, relay, handed)
	if since := relay.LastRequest().GetSince(); since == nil || !since.AsTime().Equal(handed.Add(-2*connectionPeriod)) {
		t.Fatalf("the new leader's stream since %v, want two connection periods before the hand-off %v", since.AsTime(), handed)
	}
	newest := next[len(next)-1].GetFlow().GetTime().AsTime()
	waitFor(t, "the flows after the hand-off", func() bool { return r.mode.(*relayMode).cursor.Latest().Equal(newest) })
	got := h.WaitRecords(t, 1)
	if len(got) != 1 || !strings.Contains(got[0], ":8080") {
		t.Fatalf("records %v, want one: the connection after the hand-off, not again the one it counted", got)
	}
	if n := flowsourcetest.Read(h.Tel).Dropped["handed_off"]; n != 3 {
		t.Errorf("%d flows dropped as handed off, want the 3 up to the hand-off", n)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := h.Sink.LogRecordCount(); n != 1 {
		t.Fatalf("%d records in all, want 1", n)
	}
	if got, ok := handedOn(e); !ok || !got.Equal(newest) {
		t.Fatalf("handed on %v (%v) at shutdown, want %v", got, ok, newest)
	}
}

// startHandedOver starts a receiver gated by a fake enforcer that was handed
// the stream at handed, makes it lead, and returns once its stream is open.
// The test shuts the receiver down.
func startHandedOver(t *testing.T, relay *dataplanetest.HubbleRelay, handed time.Time) (*flowsourcetest.Harness, *hubbleReceiver, *enforcerextensiontest.Enforcer) {
	t.Helper()
	_, cfg := tlsSetup(t, relay)
	e := enforcerextensiontest.New()
	// The term ends after the receiver has shut down, as the collector shuts
	// the extensions down after the receivers: else the receiver's OnLeading
	// function would wait for the term's end past the test's.
	t.Cleanup(e.Follow)
	e.Checkpoint(flowsource.SourceHubbleRelay, handed) // the previous leader's
	h, r := startWithEnforcer(t, cfg, e)
	e.Lead()
	<-relay.Opened
	return h, r, e
}

// handedOn returns the relay's checkpoint in the fake's store, once the
// relay was released.
func handedOn(e *enforcerextensiontest.Enforcer) (time.Time, bool) {
	if !slices.Contains(e.Released(), flowsource.SourceHubbleRelay) {
		return time.Time{}, false
	}
	return e.CheckpointOf(flowsource.SourceHubbleRelay)
}

// startWithEnforcer starts a receiver of cfg whose enforcer is the fake e;
// the test shuts it down.
func startWithEnforcer(t *testing.T, cfg *Config, e *enforcerextensiontest.Enforcer) (*flowsourcetest.Harness, *hubbleReceiver) {
	t.Helper()
	// The fake is both the enforcer and the leader elector.
	id, elector := component.MustNewID("enforcer"), component.MustNewID("leader_elector")
	cfg.Enforcer, cfg.LeaderElector = &id, &elector
	set, h := flowsourcetest.NewHarness(t, metadata.Type)
	r, err := newHubbleReceiver(set, cfg, h.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), e.Host(id)); err != nil {
		t.Fatal(err)
	}
	return h, r
}

// waitFor waits up to ten seconds for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, 10*time.Second, cond)
}

// TestHandOffOfAQuietTerm: a leader that received no flow after its hand-off
// hands on what it was handed, not nothing (which would make the next leader
// read the backfill again).
func TestHandOffOfAQuietTerm(t *testing.T) {
	relay := dataplanetest.NewHubbleRelay(nil)
	handed := time.Unix(0, time.Now().Add(-time.Minute).UnixNano())
	_, r, e := startHandedOver(t, relay, handed)
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := handedOn(e); !ok || !got.Equal(handed) {
		t.Fatalf("handed on %v (%v), want %v", got, ok, handed)
	}
}
