package learningprocessor

import (
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// hubbleEnd is a pod end of the Hubble fixture as the receiver converts it.
func hubbleEnd(ns, pod, kind, name, ip string, identity int) flow.Endpoint {
	return flow.Endpoint{Address: ip, Namespace: ns, Pod: pod, WorkloadKind: kind, WorkloadName: name,
		Identity: strconv.Itoa(identity), Labels: []string{"app=" + name, "io.kubernetes.pod.namespace=" + ns}}
}

var (
	hubbleFrontend   = hubbleEnd("shop", "frontend-6d5f7b8c9-abcde", "Deployment", "frontend", "10.0.1.10", 51234)
	hubbleCart       = hubbleEnd("shop", "cart-7f8e9d0c1-fghij", "Deployment", "cart", "10.0.1.11", 51235)
	hubbleOrders     = hubbleEnd("shop", "orders-5d8f7c9b4-qw7lm", "Deployment", "orders", "10.0.2.45", 40211)
	hubblePayments   = hubbleEnd("payments", "payments-0", "StatefulSet", "payments", "10.0.2.50", 40300)
	hubblePostgres   = hubbleEnd("data", "postgres-0", "StatefulSet", "postgres", "10.0.3.20", 40400)
	hubbleReport     = hubbleEnd("batch", "report-29000000-kq8zn", "CronJob", "report", "10.0.3.60", 40600)
	hubblePrometheus = hubbleEnd("monitoring", "prometheus-6b7c8d9e0-lmnop", "Deployment", "prometheus", "10.0.3.40", 40500)
	hubbleExporter   = hubbleEnd("monitoring", "node-exporter-x7k2p", "DaemonSet", "node-exporter", "10.0.1.30", 40501)
	hubbleCoreDNS    = hubbleEnd("kube-system", "coredns-5d78c9869d-qrstu", "Deployment", "coredns", "10.0.0.10", 102)
	hubbleProbe      = hubbleEnd("default", "probe-6f8d9c7b5-vwxyz", "Deployment", "probe", "10.0.1.31", 60000)
)

// hubbleFixture returns the records that the Hubble receiver makes of the
// shared Hubble fixture (the receiver's tests hold it to them), as learning
// reads them: two ends resolved through the fixture cluster, the external
// ones, and the denied flows with their policies.
func hubbleFixture() []flow.Record {
	at := time.Date(2026, 3, 2, 10, 15, 1, 0, time.UTC)
	rec := func(outcome flow.Outcome, d flow.Direction, transport flow.Transport, src, dst flow.Endpoint, srcPort, dstPort uint32, policy flow.PolicyRef) flow.Record {
		r := flow.Record{Time: at, Provider: flow.ProviderCilium, Outcome: outcome, Direction: d, Transport: transport,
			Source: src, Destination: dst, Policy: policy, Count: 1}
		r.Reporter = flow.ReporterDestination
		if d == flow.DirectionEgress {
			r.Reporter = flow.ReporterSource
		}
		r.Source.Port, r.Destination.Port = srcPort, dstPort
		at = at.Add(time.Second)
		return r
	}
	world := func(ip string) flow.Endpoint {
		return flow.Endpoint{Address: ip, Identity: "2", External: flow.ExternalWorld}
	}
	host := flow.Endpoint{Address: "192.168.1.10", Identity: "1", External: flow.ExternalHost}
	none := flow.PolicyRef{}
	const (
		allowed, denied = flow.OutcomeAllowed, flow.OutcomeDenied
		in, out         = flow.DirectionIngress, flow.DirectionEgress
		tcp, udp        = flow.TransportTCP, flow.TransportUDP
	)
	return []flow.Record{
		rec(allowed, out, tcp, hubbleFrontend, hubbleCart, 43718, 8080, none),
		rec(allowed, in, tcp, hubbleFrontend, hubbleCart, 43718, 8080, flow.PolicyRef{Kind: "CiliumNetworkPolicy", Namespace: "shop", Name: "cart-ingress"}),
		rec(allowed, in, tcp, hubbleCart, hubbleOrders, 51000, 8080, none),
		rec(allowed, in, tcp, hubbleOrders, hubblePayments, 52000, 9000, none),
		rec(allowed, out, tcp, hubbleOrders, hubblePostgres, 53000, 5432, none),
		rec(allowed, in, tcp, hubblePayments, hubblePostgres, 54000, 5432, none),
		rec(allowed, in, tcp, hubbleReport, hubblePostgres, 55000, 5432, none),
		rec(allowed, in, tcp, hubblePrometheus, hubbleExporter, 56000, 9100, none),
		rec(allowed, out, udp, hubbleFrontend, hubbleCoreDNS, 57000, 53, none),
		rec(allowed, in, tcp, world("203.0.113.7"), hubbleFrontend, 61000, 8080, none),
		rec(allowed, in, tcp, host, hubbleFrontend, 62000, 8080, none),
		rec(allowed, out, tcp, hubbleCart, world("198.51.100.20"), 63000, 443, none),
		rec(denied, in, tcp, hubbleProbe, hubbleOrders, 40112, 8080, flow.PolicyRef{Kind: "NetworkPolicy", Namespace: "shop", Name: "deployment-orders-ingress"}),
		rec(denied, out, tcp, hubbleCart, hubblePayments, 41000, 9000, flow.PolicyRef{Kind: "CiliumNetworkPolicy", Namespace: "shop", Name: "deny-cart-to-payments"}),
	}
}

// fixtureEnforcer is a fake enforcer that knows the fixture cluster's pods by
// address, and a WorkloadNetworkPolicy on orders' ingress, whose native object
// denied the fixture's probe.
func fixtureEnforcer() *enforcerextensiontest.Enforcer {
	fake := enforcerextensiontest.New()
	for _, p := range clustertest.Pods() {
		switch {
		case p.HostNetwork:
			fake.Unresolved(p.IP, workload.UnresolvedHostNetwork)
		case p.WorkloadKind == "":
			fake.Unresolved(p.IP, workload.UnresolvedBarePod)
		default:
			w := workload.Ref{Namespace: p.Namespace, Kind: v1alpha1.WorkloadKind(p.WorkloadKind), Name: p.WorkloadName}
			fake.AddWorkload(w, enforcerextensiontest.WorkloadInfo{}, p.IP)
			fake.AddPod(w, p.Name)
			if p.GenerateName != "" {
				fake.AddPod(w, p.GenerateName+"*")
			}
		}
	}
	fake.SetPolicy(ordersIngress())
	return fake
}

// repeatedBatch is n flows of records, over and over as a busy node reports
// them: each repeat a new connection, from another source port, a moment later.
func repeatedBatch(records []flow.Record, n int) plog.Logs {
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	sl.LogRecords().EnsureCapacity(n)
	for i := range n {
		r := records[i%len(records)]
		round := i / len(records)
		r.Time = r.Time.Add(time.Duration(round) * time.Millisecond)
		r.Source.Port += uint32(round)
		r.AppendTo(sl)
	}
	return ld
}

// ordersIngress is a WorkloadNetworkPolicy on the fixture's orders ingress.
func ordersIngress() *v1alpha1.WorkloadNetworkPolicy {
	return &v1alpha1.WorkloadNetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-orders-ingress"},
		Spec: v1alpha1.WorkloadNetworkPolicySpec{PolicySpec: v1alpha1.PolicySpec{
			Backend: v1alpha1.BackendKubernetes, Direction: v1alpha1.DirectionIngress,
			TargetRef: v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "orders"},
		}},
	}
}
