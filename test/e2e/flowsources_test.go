package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// TestBinaryStreamsFromHubbleAndGoldmane runs the built collector with both gRPC
// flow receivers against a Hubble Relay (TLS) and a Goldmane (mutual TLS) serving
// the fixtures, and reads the flow records that its otlp exporter sends to a real
// OTLP receiver.
func TestBinaryStreamsFromHubbleAndGoldmane(t *testing.T) {
	controlplanetest.Require(t)
	hubbleFlows, err := dataplanetest.LoadHubble(repoFile(t, dataplanetest.HubbleFixture))
	if err != nil {
		t.Fatal(err)
	}
	goldmaneFlows, err := dataplanetest.LoadGoldmane(repoFile(t, dataplanetest.GoldmaneFixture))
	if err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, "cluster-ca")
	relay := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, dataplanetest.NewHubbleRelay(hubbleFlows)) })
	goldmane := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "goldmane", "goldmane.calico-system.svc"), ca),
		func(s *grpc.Server) { pb.RegisterFlowsServer(s, dataplanetest.NewGoldmane(goldmaneFlows)) })
	client := ca.Client(t, "network-enforcer")
	sink := startOTLPSink(t)
	health := freeAddr(t)

	config := fmt.Sprintf(`
extensions:
  health_check:
    endpoint: %[1]s
receivers:
  hubble:
    relay:
      endpoint: %[2]s
      tls:
        ca_file: %[4]s
        server_name_override: ui.hubble-relay.cilium.io
    backfill:
      since: 43800h
  goldmane:
    endpoint: %[3]s
    tls:
      ca_file: %[4]s
      cert_file: %[5]s
      key_file: %[6]s
      server_name_override: goldmane.calico-system.svc
    start_time_gte: -157680000
processors:
  batch:
    timeout: 100ms
exporters:
  otlp_grpc:
    endpoint: %[7]s
    tls:
      insecure: true
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [hubble, goldmane]
      processors: [batch]
      exporters: [otlp_grpc]
`, health, relay.Addr, goldmane.Addr, ca.CertFile, client.CertFile, client.KeyFile, sink.Addr)
	p := startBinary(t, writeConfig(t, "config.yaml", config))

	// The fixtures hold 14 Hubble records and 16 Goldmane records, and the
	// relay's notice of 17 events lost on worker-2, which is a gap record.
	want := map[flow.Provider]int{flow.ProviderCilium: 14, flow.ProviderCalico: 16}
	var got map[flow.Provider]int
	var denied, gaps []string
	records := func() bool {
		got, denied, gaps = map[flow.Provider]int{}, nil, nil
		for _, lr := range sink.Records() {
			var g flow.Gap
			if g.ReadFrom(lr) {
				gaps = append(gaps, fmt.Sprintf("%s %s %s %d", g.Provider, g.Cause, g.Node, g.Lost))
				continue
			}
			var r flow.Record
			r.ReadFrom(lr)
			got[r.Provider]++
			if r.Outcome == flow.OutcomeDenied {
				denied = append(denied, fmt.Sprintf("%s %s/%s -> %s/%s:%d by %s/%s", r.Provider,
					r.Source.Namespace, r.Source.Pod, r.Destination.Namespace, r.Destination.Pod, r.Destination.Port,
					r.Policy.Namespace, r.Policy.Name))
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("the collector exited: %v", p.err)
		default:
		}
		return got[flow.ProviderCilium] == want[flow.ProviderCilium] && got[flow.ProviderCalico] == want[flow.ProviderCalico]
	}
	if !testwait.Try(t, "every provider's records", time.Minute, records) {
		t.Fatalf("records by provider %v, want %v", got, want)
	}
	if len(denied) != 4 {
		t.Fatalf("denied records %v, want 2 per provider", denied)
	}
	if want := []string{"cilium lost_events worker-2 17"}; !slices.Equal(gaps, want) {
		t.Fatalf("gap records %q, want %q", gaps, want)
	}
}
