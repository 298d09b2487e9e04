package violationprocessor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// amendmentsOf are the amendment edges in what the processor sent, as
// "<peer>:<port> <target revision> <peer revision> <flows>".
func amendmentsOf(lds []plog.Logs) []string {
	var out []string
	var am learning.Amendment
	for _, ld := range lds {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			if am.ReadFrom(lr) {
				out = append(out, fmt.Sprintf("%s %s %s %s:%d %s %s %d", am.Policy, am.Workload, am.Direction, am.Peer.Name, am.Port,
					am.TargetRevision, am.PeerRevision, am.Flows))
			}
		})
	}
	slices.Sort(out)
	return out
}

// TestViolationsTeachTheAmendment: on every backend and in every mode, the
// violations that the judge finds are the edges handed on to the policy's
// amendment (one verdict, two views), each once per batch with its flows
// added up and the revisions of the pods at its ends; an allowed flow, a
// peer that no spec can name and an acknowledged violation teach nothing.
func TestViolationsTeachTheAmendment(t *testing.T) {
	for _, b := range []v1alpha1.Backend{v1alpha1.BackendKubernetes, v1alpha1.BackendCilium, v1alpha1.BackendIstio} {
		for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
			t.Run(fmt.Sprintf("%s/%s", b, mode), func(t *testing.T) {
				fake := enforcerextensiontest.New()
				fake.Plane = netpolmatch.DataPlaneCilium
				provider := flow.ProviderCilium
				if b == v1alpha1.BackendIstio {
					fake.Plane, provider = netpolmatch.DataPlaneIstio, flow.ProviderIstio
				}
				fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "cart"}}, "10.0.0.2")
				fake.AddWorkload(intruder, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "intruder"}}, "10.0.0.3")
				fake.AddWorkload(frontend, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "frontend"}}, "10.0.0.4")
				fake.SetIPRevision("10.0.0.2", workload.Revision{Workload: cart, Name: "cart-7c9d", Created: time.Now()})
				fake.SetIPRevision("10.0.0.4", workload.Revision{Workload: frontend, Name: "frontend-5f6a", Created: time.Now()})
				pol := agreementPolicy(b, mode)
				// A person acknowledged the intruder on 7070.
				pol.Status.AcknowledgedViolations = []v1alpha1.AcknowledgedViolation{{Violation: v1alpha1.ViolationRecord{
					ID: "1", Protocol: "TCP", DstPort: 7070, Action: mode,
					Policy:      v1alpha1.PolicyReference{Namespace: pol.Namespace, Name: pol.Name},
					Source:      v1alpha1.ViolationEndpoint{Class: v1alpha1.PeerClassWorkload, Namespace: "shop", Kind: "Deployment", Name: "intruder", Identity: "cluster.local/ns/shop/sa/intruder"},
					Destination: v1alpha1.ViolationEndpoint{Class: v1alpha1.PeerClassWorkload, Namespace: "shop", Kind: "Deployment", Name: "cart", Identity: "cluster.local/ns/shop/sa/cart", Revision: "cart-7c9d"},
				}}}
				fake.SetPolicy(pol)
				p, sink := fake.StartLogsProcessor(t, newFactory(enforcerextensiontest.FindWriting))
				fake.Lead()

				frontendEnd := flow.Endpoint{Address: "10.0.0.4", Identity: "cluster.local/ns/shop/sa/frontend"}
				intruderEnd := flow.Endpoint{Address: "10.0.0.3", Identity: "cluster.local/ns/shop/sa/intruder"}
				world := flow.Endpoint{Address: "198.51.100.7", External: flow.ExternalWorld}
				ld := plog.NewLogs()
				sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
				for _, e := range []struct {
					end     flow.Endpoint
					peer    workload.Ref
					port    uint32
					allowed bool
				}{
					{frontendEnd, frontend, 8080, true},
					{frontendEnd, frontend, 9090, false}, {frontendEnd, frontend, 9090, false},
					{intruderEnd, intruder, 8080, false},
					{intruderEnd, intruder, 7070, false}, // acknowledged
					{world, workload.Ref{}, 8080, false}, // no spec names it (outside peers dropped)
				} {
					candidateWithPeer(t, sl, provider, b, e.end, e.peer, e.port, dataPlaneOutcome(b, mode, e.allowed))
				}
				if err := p.ConsumeLogs(context.Background(), ld); err != nil {
					t.Fatal(err)
				}
				got := amendmentsOf(sink.AllLogs())
				want := []string{
					"deployment-cart-ingress shop/Deployment/cart Ingress frontend:9090 cart-7c9d frontend-5f6a 2",
					"deployment-cart-ingress shop/Deployment/cart Ingress intruder:8080 cart-7c9d  1",
				}
				if !slices.Equal(got, want) {
					t.Errorf("amendment edges %q, want %q", got, want)
				}
				if errs := fake.Drain(); len(errs) != 0 {
					t.Fatal(errs)
				}
				for _, v := range fake.PolicyNow(cartPolicy).Status.Violations {
					if v.Destination.Revision != "cart-7c9d" {
						t.Errorf("violation %s of port %d names the target's revision %q, want cart-7c9d", v.ID, v.DstPort, v.Destination.Revision)
					}
				}
			})
		}
	}
}

// candidateWithPeer appends a flow from end to cart on port as the learning
// processor hands on a side that a policy governs: with the peer as
// learning names it (a workload, or an Istio principal; none learnable for
// an outside end).
func candidateWithPeer(t *testing.T, sl plog.ScopeLogs, provider flow.Provider, b v1alpha1.Backend, end flow.Endpoint,
	peer workload.Ref, port uint32, outcome flow.Outcome) {
	t.Helper()
	rec := flow.Record{Time: time.Now(), Provider: provider, Outcome: outcome, Reporter: flow.ReporterDestination,
		Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
		Source: end, Destination: flow.Endpoint{Address: "10.0.0.2", Port: port, Identity: "cluster.local/ns/shop/sa/cart"}}
	flows := plog.NewLogs()
	rec.AppendTo(flows.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	o := learning.Observation{Edge: learning.Edge{Backend: b, Workload: cart, Direction: v1alpha1.DirectionIngress,
		Protocol: "tcp", Port: port}, Class: v1alpha1.PeerClassWorkload}
	switch {
	case peer.Name == "":
		o.Class, o.PeerAddress = v1alpha1.PeerClassExternal, end.Address
	case b == v1alpha1.BackendIstio:
		o.Principal = end.Identity
		o.Peer = peer // the violation record names the workload
	default:
		o.Peer = peer
	}
	learning.AppendCandidate(sl, flows.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0), cart, v1alpha1.DirectionIngress, &o)
}
