package hubblereceiver

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/flowsource/flowsourcetest"
)

// realAgentRecordings are flows that a real Cilium agent emitted, recorded with
// `hubble observe -o jsonpb` on the real node: traces at every observation
// point, policy verdicts and drop notifications, monitor aggregation off.
var realAgentRecordings = []string{"probe.jsonl", "journey.jsonl.gz"}

func loadRealAgent(tb testing.TB, name string) []*flowpb.Flow {
	tb.Helper()
	resps, err := dataplanetest.LoadHubble(filepath.Join("..", "..", "testdata", "hubble", "cilium-1.20", name))
	if err != nil {
		tb.Fatal(err)
	}
	var out []*flowpb.Flow
	for _, r := range resps {
		if f := r.GetFlow(); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// socket is one end of a connection: an address and a port.
type socket struct {
	addr string
	port uint32
}

// connection is a TCP connection as the recording shows it after the agent's
// translation of a Service address: the client's socket and the server's. A
// client port that is used again, for another server, is another connection.
type connection struct {
	client, server socket
}

// attempt is what the raw recording says of one connection, read from the
// TCP flags, the conntrack reasons and the drop notifications alone, not from
// the fields the converter reads: the client's SYN and whether the agent
// refused it, or, for a connection opened before the recording began, its
// first packet after the handshake.
type attempt struct {
	refused bool
	// midway: the recording has no SYN of it, only an established packet.
	midway bool
}

// oracle reads the connections of a recording, and for each client socket
// the Service ports its SYNs were sent to before the agent translated them.
func oracle(flows []*flowpb.Flow) (map[connection]*attempt, map[socket][]uint32) {
	out := map[connection]*attempt{}
	services := map[socket][]uint32{}
	for _, f := range flows {
		tcp := f.GetL4().GetTCP()
		if tcp == nil {
			continue
		}
		c := connection{socket{f.GetIP().GetSource(), tcp.GetSourcePort()}, socket{f.GetIP().GetDestination(), tcp.GetDestinationPort()}}
		syn := tcp.GetFlags().GetSYN() && !tcp.GetFlags().GetACK()
		switch {
		case syn && f.GetDestinationService() != nil:
			if !slices.Contains(services[c.client], c.server.port) {
				services[c.client] = append(services[c.client], c.server.port)
			}
		case syn:
			a := out[c]
			if a == nil || a.midway {
				a = &attempt{}
				out[c] = a
			}
			if f.GetVerdict() == flowpb.Verdict_DROPPED {
				a.refused = true
			}
		case f.GetTraceReason() == flowpb.TraceReason_ESTABLISHED && out[c] == nil:
			out[c] = &attempt{midway: true}
		}
	}
	return out, services
}

func convertAll(flows []*flowpb.Flow) []flow.Record {
	c := newConnections()
	var out []flow.Record
	for _, f := range flows {
		var rec flow.Record
		if _, ok := c.convert(f, &rec); ok {
			out = append(out, rec)
		}
	}
	return out
}

// TestRealAgentConnectionsLearnedOnce checks the records of a real agent's
// flows against the connections that the raw recording shows: every record is a
// client's connection in its real direction, to its real (translated)
// destination port; every connection that went through gives an allowed record
// that every end judges; every refused attempt gives exactly one denial.
func TestRealAgentConnectionsLearnedOnce(t *testing.T) {
	for _, name := range realAgentRecordings {
		t.Run(name, func(t *testing.T) {
			flows := loadRealAgent(t, name)
			attempts, services := oracle(flows)
			if len(attempts) == 0 {
				t.Fatal("the recording shows no connection attempt")
			}
			checkAgainstOracle(t, convertAll(flows), attempts, services)
		})
	}
}

func checkAgainstOracle(t *testing.T, recs []flow.Record, attempts map[connection]*attempt, services map[socket][]uint32) {
	t.Helper()
	passed := map[connection]int{} // allowed records with no direction: the trace of a connection that went through
	denials := map[connection]int{}
	for _, rec := range recs {
		if rec.Transport != flow.TransportTCP {
			continue
		}
		c := connection{socket{rec.Source.Address, rec.Source.Port}, socket{rec.Destination.Address, rec.Destination.Port}}
		if attempts[c] == nil {
			t.Errorf("record of no client's connection (a reply? a Service port?): %s from port %d, Service ports %v",
				flowsourcetest.Describe(rec), rec.Source.Port, services[c.client])
			continue
		}
		switch {
		case rec.Outcome == flow.OutcomeDenied:
			denials[c]++
		case rec.Outcome == flow.OutcomeAllowed && rec.Direction == "":
			passed[c]++
		}
	}
	for c, a := range attempts {
		switch {
		case a.refused && denials[c] != 1:
			t.Errorf("refused attempt %v: %d denials, want 1", c, denials[c])
		case a.refused && passed[c] != 0:
			t.Errorf("refused attempt %v: %d records of a connection that went through", c, passed[c])
		case !a.refused && passed[c] != 1:
			t.Errorf("connection %v (opened before the recording: %v): %d records that it went through, want 1", c, a.midway, passed[c])
		case !a.refused && denials[c] != 0:
			t.Errorf("connection %v: %d denials of a connection that went through", c, denials[c])
		}
	}
}

// TestRealAgentMonitorAggregation feeds the recording as the agent sends it at
// the monitor aggregation that Cilium's chart sets (medium: no trace before
// connection tracking, and of the traces after it, only those of a new
// connection or of new TCP flags): the same connections, the same records.
func TestRealAgentMonitorAggregation(t *testing.T) {
	for _, name := range realAgentRecordings {
		t.Run(name, func(t *testing.T) {
			flows := loadRealAgent(t, name)
			var medium []*flowpb.Flow
			flagsSeen := map[string]bool{}
			for _, f := range flows {
				if f.GetEventType().GetType() == eventTrace {
					if strings.HasPrefix(f.GetTraceObservationPoint().String(), "FROM_") {
						continue
					}
					key := fmt.Sprint(f.GetIP().GetSource(), f.GetIP().GetDestination(), f.GetL4().GetTCP().GetSourcePort(),
						f.GetL4().GetTCP().GetFlags().String(), f.GetTraceObservationPoint())
					if flagsSeen[key] {
						continue
					}
					flagsSeen[key] = true
				}
				medium = append(medium, f)
			}
			if len(medium) >= len(flows) {
				t.Fatal("aggregation removed no event")
			}
			attempts, services := oracle(flows)
			checkAgainstOracle(t, convertAll(medium), attempts, services)
			if got, want := describeAll(convertAll(medium)), describeAll(convertAll(flows)); !slices.Equal(got, want) {
				t.Errorf("records at medium aggregation:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRealAgentPeers checks how the recording's ends that are not pods are
// named: the API server by the backend the agent translated the kubernetes
// Service to, never as the world at the Service's address; the node as the
// host; the outside address as the world.
func TestRealAgentPeers(t *testing.T) {
	got := describeAll(convertAll(loadRealAgent(t, "probe.jsonl")))
	want := []string{
		"allowed   tcp host:10.217.0.120 -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=",
		"allowed   tcp probe/client-allowed-56c748978f-nn5xb(Deployment/client-allowed) -> apiserver:10.217.1.1:16443 policy=",
		"allowed   tcp probe/client-allowed-56c748978f-nn5xb(Deployment/client-allowed) -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=",
		"allowed   tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> apiserver:10.217.1.1:16443 policy=",
		"allowed   tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=",
		"allowed egress source tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> apiserver:10.217.1.1:16443 policy=CiliumNetworkPolicy/probe/client-denied-egress",
		"allowed egress source tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=CiliumNetworkPolicy/probe/client-denied-egress",
		"allowed ingress destination tcp host:10.217.0.120 -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=",
		"allowed ingress destination tcp probe/client-allowed-56c748978f-nn5xb(Deployment/client-allowed) -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=NetworkPolicy/probe/server-allow-allowed",
		"denied egress source tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> world:192.0.2.1:80 policy=CiliumNetworkPolicy/probe/client-denied-egress",
		"denied ingress destination tcp probe/client-denied-654f884c7-4g6jc(Deployment/client-denied) -> probe/server-7748bbfff4-7znhg(Deployment/server):8080 policy=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("distinct records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// describeAll is the sorted set of the records' descriptions.
func describeAll(recs []flow.Record) []string {
	var out []string
	for _, r := range recs {
		d := flowsourcetest.Describe(r)
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
