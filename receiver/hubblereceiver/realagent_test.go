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
var realAgentRecordings = []string{"probe.jsonl"}

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

// socket is a client's end of a connection: its address and port, which a
// connection keeps however the agent translates the destination.
type socket struct {
	addr string
	port uint32
}

// attempt is what the raw recording says of one connection attempt, read
// from the TCP flags and the drop notifications alone, not from the fields
// the converter reads: the client's SYN and whether the agent refused it.
type attempt struct {
	client   socket
	refused  bool
	ports    []uint32 // destination ports of the SYN, before and after translation
	services []uint32 // of those, the ports of a Service address
}

// oracle reads the connection attempts of a recording from its TCP SYNs.
func oracle(flows []*flowpb.Flow) map[socket]*attempt {
	out := map[socket]*attempt{}
	for _, f := range flows {
		tcp := f.GetL4().GetTCP()
		if tcp == nil || !tcp.GetFlags().GetSYN() || tcp.GetFlags().GetACK() {
			continue
		}
		s := socket{f.GetIP().GetSource(), tcp.GetSourcePort()}
		a := out[s]
		if a == nil {
			a = &attempt{client: s}
			out[s] = a
		}
		if f.GetVerdict() == flowpb.Verdict_DROPPED {
			a.refused = true
		}
		if !slices.Contains(a.ports, tcp.GetDestinationPort()) {
			a.ports = append(a.ports, tcp.GetDestinationPort())
		}
		if f.GetDestinationService() != nil && !slices.Contains(a.services, tcp.GetDestinationPort()) {
			a.services = append(a.services, tcp.GetDestinationPort())
		}
	}
	return out
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
			attempts := oracle(flows)
			if len(attempts) == 0 {
				t.Fatal("the recording shows no connection attempt")
			}
			checkAgainstOracle(t, convertAll(flows), attempts)
		})
	}
}

func checkAgainstOracle(t *testing.T, recs []flow.Record, attempts map[socket]*attempt) {
	t.Helper()
	passed := map[socket]int{} // allowed records with no direction: the trace of a connection that went through
	denials := map[socket]int{}
	for _, rec := range recs {
		if rec.Transport != flow.TransportTCP {
			continue
		}
		s := socket{rec.Source.Address, rec.Source.Port}
		a := attempts[s]
		if a == nil {
			t.Errorf("record of no client's connection (a reply?): %s from port %d", flowsourcetest.Describe(rec), rec.Source.Port)
			continue
		}
		if !slices.Contains(a.ports, rec.Destination.Port) || slices.Contains(a.services, rec.Destination.Port) {
			t.Errorf("%s: destination port %d, want the connection's translated port (SYN to %v, Service ports %v)",
				flowsourcetest.Describe(rec), rec.Destination.Port, a.ports, a.services)
		}
		switch {
		case rec.Outcome == flow.OutcomeDenied:
			denials[s]++
		case rec.Outcome == flow.OutcomeAllowed && rec.Direction == "":
			passed[s]++
		}
	}
	for s, a := range attempts {
		switch {
		case a.refused && denials[s] != 1:
			t.Errorf("refused attempt from %v: %d denials, want 1", s, denials[s])
		case a.refused && passed[s] != 0:
			t.Errorf("refused attempt from %v: %d records of a connection that went through", s, passed[s])
		case !a.refused && passed[s] != 1:
			t.Errorf("connection from %v to %v: %d records that it went through, want 1", s, a.ports, passed[s])
		case !a.refused && denials[s] != 0:
			t.Errorf("connection from %v: %d denials of a connection that went through", s, denials[s])
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
			checkAgainstOracle(t, convertAll(medium), oracle(flows))
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
