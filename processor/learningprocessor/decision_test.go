package learningprocessor

import (
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor/internal/metadata"
)

// everyDecision are flows that lead learning to each of its decisions: the
// Hubble fixture's (edges, candidates of a governed target, drops of external
// and host ends and of denied flows), and Istio's (an edge to a principal,
// sources without an identity, outside and a pod's, a denied flow whose target
// only its policy names), a flow without a port, a bare pod and a host-network
// pod as peers.
func everyDecision() []flow.Record {
	at := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	istio := func(outcome flow.Outcome, src, dst flow.Endpoint, policy flow.PolicyRef) flow.Record {
		return flow.Record{Time: at, Provider: flow.ProviderIstio, Outcome: outcome, Reporter: flow.ReporterDestination,
			Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Source: src, Destination: dst, Policy: policy, Count: 1}
	}
	cart := flow.Endpoint{Address: "10.0.1.11", Port: 8080, Namespace: "shop", Pod: "cart-7f8e9d0c1-fghij"}
	records := hubbleFixture()
	noPort := records[0]
	noPort.Destination.Port = 0
	barePeer, hostNetworkPeer := records[0], records[0]
	barePeer.Destination = flow.Endpoint{Address: "10.0.9.10", Port: 8080, Namespace: "default", Pod: "debug-shell"}
	hostNetworkPeer.Destination = flow.Endpoint{Address: "172.18.0.2", Port: 10249}
	return append(records, noPort, barePeer, hostNetworkPeer,
		istio(flow.OutcomeAllowed, flow.Endpoint{Address: "10.0.1.10", Identity: "cluster.local/ns/shop/sa/frontend"}, cart, flow.PolicyRef{}),
		istio(flow.OutcomeAllowed, flow.Endpoint{Address: "203.0.113.9"}, cart, flow.PolicyRef{}),
		istio(flow.OutcomeAllowed, flow.Endpoint{Address: "10.0.1.10"}, cart, flow.PolicyRef{}),
		istio(flow.OutcomeDenied, flow.Endpoint{Address: "10.0.1.31", Identity: "cluster.local/ns/default/sa/probe"},
			flow.Endpoint{Port: 8080}, flow.PolicyRef{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "deployment-orders-ingress"}),
	)
}

// withRepeats is records over and over, each repeat a moment later and with
// other counts, and a record of another kind among them.
func withRepeats(records []flow.Record, rounds int) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for round := range rounds {
		for i, r := range records {
			r.Time = r.Time.Add(time.Duration((round*7+i*3)%11) * time.Second)
			r.Count = int64((round + i) % 4) // 0 counts as 1
			r.Source.Port += uint32(round)
			r.AppendTo(sl)
		}
		if round == 1 {
			other := sl.LogRecords().AppendEmpty()
			other.SetEventName("another.event")
			other.Attributes().PutStr("k", "v")
		}
	}
	return ld
}

// TestRepeatsReplayTheFirstDecision: a batch whose flows repeat hands on
// exactly what deciding each flow afresh does (the records, in order, with the
// observations' flow counts and times) and counts the same, with each
// outside-peers setting and with observations on and off.
func TestRepeatsReplayTheFirstDecision(t *testing.T) {
	ld := withRepeats(everyDecision(), 5)
	for name, configure := range map[string]func(*Config){
		"default":    func(*Config) {},
		"ip_blocks":  func(c *Config) { c.OutsidePeers, c.IPv4Prefix = OutsidePeersIPBlocks, 24 },
		"no observe": func(c *Config) { c.Observe = false },
	} {
		t.Run(name, func(t *testing.T) {
			run := func(decideEachFlow bool) (plog.Logs, counts) {
				cfg := createDefaultConfig().(*Config)
				configure(cfg)
				p, err := newLearningProcessor(processortest.NewNopSettings(metadata.Type), cfg)
				if err != nil {
					t.Fatal(err)
				}
				p.enforcer, p.decideEachFlow = fixtureEnforcer(), decideEachFlow
				return p.learnBatch(ld)
			}
			want, wantCounts := run(true)
			got, gotCounts := run(false)
			if !reflect.DeepEqual(gotCounts, wantCounts) {
				t.Errorf("counts %+v, want %+v", gotCounts, wantCounts)
			}
			if g, w := marshal(t, got), marshal(t, want); g != w {
				t.Errorf("handed on\n%s\nwant\n%s", g, w)
			}
			// The batch makes every kind of decision, so that the
			// comparison covers each.
			if wantCounts.edges == 0 || wantCounts.candidates == 0 || len(wantCounts.dropped) < 4 {
				t.Errorf("the batch does not make every decision: %+v", wantCounts)
			}
		})
	}
}

func marshal(t *testing.T, ld plog.Logs) string {
	t.Helper()
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
