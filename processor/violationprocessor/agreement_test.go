package violationprocessor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// agreementEdge is one edge into cart that the test sends flows of, and
// whether the policy of agreementPolicy allows it.
type agreementEdge struct {
	peer    flow.Endpoint
	port    uint32
	allowed bool
}

var (
	frontend       = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "frontend"}
	agreementEdges = []agreementEdge{
		{peer: flow.Endpoint{Address: "10.0.0.4", Identity: "cluster.local/ns/shop/sa/frontend"}, port: 8080, allowed: true},
		{peer: flow.Endpoint{Address: "10.0.0.4", Identity: "cluster.local/ns/shop/sa/frontend"}, port: 9090},
		{peer: flow.Endpoint{Address: "10.0.0.3", Identity: "cluster.local/ns/shop/sa/intruder"}, port: 8080},
		{peer: flow.Endpoint{Address: "198.51.100.7", External: flow.ExternalWorld}, port: 8080},
	}
)

// agreementPolicy lets frontend reach cart on TCP 8080, on backend b in mode.
func agreementPolicy(b v1alpha1.Backend, mode v1alpha1.PolicyMode) *v1alpha1.WorkloadNetworkPolicy {
	spec := v1alpha1.PolicySpec{Backend: b, Direction: v1alpha1.DirectionIngress,
		TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "cart"}}
	if b == v1alpha1.BackendIstio {
		spec.Istio = &v1alpha1.IstioPolicySpec{Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "cart"}},
			Rules: []v1alpha1.IstioRule{{
				From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{Principals: []string{"cluster.local/ns/shop/sa/frontend"}}}},
				To:   []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: []string{"8080"}}}},
			}}}
	} else {
		spec.Kubernetes = &networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8080))}},
			}},
		}
	}
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: cartPolicy.Namespace, Name: cartPolicy.Name, Generation: 1},
		Spec:       v1alpha1.WorkloadNetworkPolicySpec{Mode: mode, PolicySpec: spec},
	}
}

// dataPlaneOutcome is what the data plane reports for a flow of an edge
// that the policy allows or not: in protect mode it refuses what the policy
// does not allow; in monitor mode Istio's ztunnel reports its dry-run match,
// and the other backends have no object, so the flow passes as allowed.
func dataPlaneOutcome(b v1alpha1.Backend, mode v1alpha1.PolicyMode, allowed bool) flow.Outcome {
	switch {
	case allowed:
		return flow.OutcomeAllowed
	case mode == v1alpha1.PolicyModeProtect:
		return flow.OutcomeDenied
	case b == v1alpha1.BackendIstio:
		return flow.OutcomeDryRunDenied
	}
	return flow.OutcomeAllowed
}

// TestEvidenceAndViolationsAgree: on every backend and in every mode, a
// policy's evidence and its violations are one view of one verdict: an
// observed edge is WouldBlock in the status exactly when its flows are
// reported as violations. Monitor mode on the kubernetes and cilium backends
// has no object in the data plane, so there the verdict is the software's
// own; elsewhere the data plane's, as it enforces what the spec says.
func TestEvidenceAndViolationsAgree(t *testing.T) {
	for _, b := range []v1alpha1.Backend{v1alpha1.BackendKubernetes, v1alpha1.BackendCilium, v1alpha1.BackendIstio} {
		for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
			t.Run(fmt.Sprintf("%s/%s", b, mode), func(t *testing.T) {
				fake := enforcerextensiontest.New()
				fake.Plane = netpolmatch.DataPlaneCilium
				provider := flow.ProviderCilium
				if b == v1alpha1.BackendIstio {
					fake.Plane, provider = netpolmatch.DataPlaneIstio, flow.ProviderIstio
				}
				nsLabels := map[string]string{corev1.LabelMetadataName: "shop"}
				fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "cart"}, NamespaceLabels: nsLabels}, "10.0.0.2")
				fake.AddWorkload(intruder, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "intruder"}, NamespaceLabels: nsLabels}, "10.0.0.3")
				fake.AddWorkload(frontend, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "frontend"}, NamespaceLabels: nsLabels}, "10.0.0.4")
				fake.Unresolved("198.51.100.7", workload.UnresolvedExternal)
				fake.SetPolicy(agreementPolicy(b, mode))
				p, sink := fake.StartLogsProcessor(t, newFactory(enforcerextensiontest.FindWriting))
				fake.Lead()

				var wantBlocked []string
				for _, e := range agreementEdges {
					sendFlow(t, p, provider, e.peer, e.port, dataPlaneOutcome(b, mode, e.allowed))
					if !e.allowed {
						wantBlocked = append(wantBlocked, fmt.Sprintf("%s:%d", e.peer.Address, e.port))
					}
				}
				if errs := fake.Drain(); len(errs) != 0 {
					t.Fatal(errs)
				}
				st := fake.PolicyNow(cartPolicy).Status
				var wouldBlock, violated []string
				for _, o := range st.Observed {
					if o.Verdict == v1alpha1.VerdictWouldBlock {
						wouldBlock = append(wouldBlock, fmt.Sprintf("%s:%d", peerAddress(o.Peer), o.Port))
					}
				}
				for _, v := range st.Violations {
					violated = append(violated, fmt.Sprintf("%s:%d", violationAddress(v.Source), v.DstPort))
				}
				slices.Sort(wantBlocked)
				slices.Sort(wouldBlock)
				slices.Sort(violated)
				if len(st.Observed) != len(agreementEdges) {
					t.Fatalf("%d observed edges, want %d: %+v", len(st.Observed), len(agreementEdges), st.Observed)
				}
				if !slices.Equal(wouldBlock, wantBlocked) {
					t.Errorf("evidence: WouldBlock %v, want %v", wouldBlock, wantBlocked)
				}
				if !slices.Equal(violated, wouldBlock) {
					t.Errorf("violations %v, evidence WouldBlock %v: they disagree", violated, wouldBlock)
				}
				if n := eventsNamed(sink, "policy_violation_observed"); n != len(wantBlocked) {
					t.Errorf("%d violation events, want %d", n, len(wantBlocked))
				}
			})
		}
	}
}

// peerAddress names an observed edge's peer by its workload's pod address
// in this test, or its address.
func peerAddress(p v1alpha1.ObservedPeer) string {
	switch p.Name {
	case "frontend":
		return "10.0.0.4"
	case "intruder":
		return "10.0.0.3"
	}
	return p.Address
}

// violationAddress names a violation record's source as peerAddress does.
func violationAddress(v v1alpha1.ViolationEndpoint) string {
	return peerAddress(v1alpha1.ObservedPeer{Name: v.Name, Address: v.Address})
}

// sendFlow hands the processor a flow from peer to cart on port with the
// data plane's outcome, reported at cart, as the learning processor hands on
// a side that a policy governs.
func sendFlow(t *testing.T, p interface {
	ConsumeLogs(context.Context, plog.Logs) error
}, provider flow.Provider, peer flow.Endpoint, port uint32, outcome flow.Outcome) {
	t.Helper()
	rec := flow.Record{Time: time.Now(), Provider: provider, Outcome: outcome, Reporter: flow.ReporterDestination,
		Direction: flow.DirectionIngress, Transport: flow.TransportTCP, Count: 1,
		Source: peer, Destination: flow.Endpoint{Address: "10.0.0.2", Port: port, Identity: "cluster.local/ns/shop/sa/cart"}}
	consumeCandidate(t, p, &rec, v1alpha1.DirectionIngress)
}

// TestViolationRecordNamesThePeer: a violation record and its event name a
// peer beyond the workloads as the policy's evidence does: by its class, its
// address, its DNS name and its entity, never by an address put in the
// workload's name or a data plane's number for it. Two peers that differ in
// their name alone are two records.
func TestViolationRecordNamesThePeer(t *testing.T) {
	fake := enforcerextensiontest.New()
	fake.Plane = netpolmatch.DataPlaneCilium
	fake.AddWorkload(cart, enforcerextensiontest.WorkloadInfo{PodLabels: map[string]string{"app": "cart"}}, "10.0.0.2")
	fake.Unresolved("172.18.0.5", workload.UnresolvedAPIServer)
	fake.Unresolved("198.51.100.77", workload.UnresolvedExternal)
	pol := agreementPolicy(v1alpha1.BackendCilium, v1alpha1.PolicyModeMonitor)
	pol.Spec.Direction = v1alpha1.DirectionEgress
	pol.Spec.Kubernetes.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	pol.Spec.Kubernetes.Ingress = nil
	pol.Spec.Outside = []v1alpha1.OutsidePeer{{DNSName: "api.allowed.example"}}
	fake.SetPolicy(pol)
	p, sink := fake.StartLogsProcessor(t, newFactory(enforcerextensiontest.FindWriting))
	fake.Lead()

	apiServer := flow.Endpoint{Address: "172.18.0.5", Port: 6443, External: flow.ExternalAPIServer, Identity: "7"}
	named := func(name string) flow.Endpoint {
		return flow.Endpoint{Address: "198.51.100.77", Port: 443, External: flow.ExternalWorld, Identity: "2", Names: []string{name}}
	}
	for _, dst := range []flow.Endpoint{apiServer, named("other.vendor.example"), named("more.vendor.example"), named("api.allowed.example")} {
		rec := flow.Record{Time: time.Now(), Provider: flow.ProviderCilium, Outcome: flow.OutcomeAllowed, Reporter: flow.ReporterSource,
			Direction: flow.DirectionEgress, Transport: flow.TransportTCP, Count: 1,
			Source: flow.Endpoint{Address: "10.0.0.2", Identity: "51234"}, Destination: dst}
		consumeCandidate(t, p, &rec, v1alpha1.DirectionEgress)
	}
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, v := range fake.PolicyNow(cartPolicy).Status.Violations {
		d := v.Destination
		got = append(got, fmt.Sprintf("class=%s name=%q identity=%q address=%s dnsName=%s entity=%s port=%d",
			d.Class, d.Name, d.Identity, d.Address, d.DNSName, d.Entity, v.DstPort))
	}
	slices.Sort(got)
	want := []string{
		`class=APIServer name="" identity="" address=172.18.0.5 dnsName= entity=APIServer port=6443`,
		`class=External name="" identity="" address=198.51.100.77 dnsName=more.vendor.example entity= port=443`,
		`class=External name="" identity="" address=198.51.100.77 dnsName=other.vendor.example entity= port=443`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var events []string
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			a := lr.Attributes().AsRaw()
			if lr.EventName() == "policy_violation_observed" && a["destination.entity"] == "APIServer" {
				events = append(events, fmt.Sprint(a["destination.class"], " ", a["destination.address"], " ", a["destination.workload.name"]))
			}
		})
	}
	if len(events) != 1 || events[0] != "APIServer 172.18.0.5 " {
		t.Fatalf("the API server's events: %q", events)
	}
}
