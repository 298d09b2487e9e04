package k8swriterexporter

import (
	"go.opentelemetry.io/collector/exporter/exportertest"

	"context"
	"fmt"
	"testing"

	"github.com/kubewarden/network-enforcer/extension/enforcerextension"

	"go.opentelemetry.io/collector/pdata/plog"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/learning"
)

func learnEdges(t *testing.T, w *writer, edges ...learning.Edge) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range edges {
		edges[i].AppendTo(sl)
	}
	if err := w.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
}

func cidrEdge(d v1alpha1.Direction, cidr, proto string, port uint32) learning.Edge {
	wl := cart
	if d == v1alpha1.DirectionEgress {
		wl = frontend
	}
	return learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: wl, Direction: d, PeerCIDR: cidr, Protocol: proto, Port: port}
}

// peersAndPorts describes rules as "<peer> <ports>", a peer being an ipBlock's
// CIDR or a pod selector's app label.
func peersAndPorts(peers func(i int) []networkingv1.NetworkPolicyPeer, ports func(i int) []networkingv1.NetworkPolicyPort, n int) []string {
	var out []string
	for i := range n {
		for _, p := range peers(i) {
			peer := ""
			switch {
			case p.IPBlock != nil:
				peer = p.IPBlock.CIDR
			case p.PodSelector != nil:
				peer = "app=" + p.PodSelector.MatchLabels["app"]
			}
			var ps []string
			for _, port := range ports(i) {
				ps = append(ps, string(*port.Protocol)+"/"+port.Port.String())
			}
			out = append(out, fmt.Sprint(peer, " ", ps))
		}
	}
	return out
}

func ingressOf(spec *networkingv1.NetworkPolicySpec) []string {
	in := spec.Ingress
	return peersAndPorts(func(i int) []networkingv1.NetworkPolicyPeer { return in[i].From },
		func(i int) []networkingv1.NetworkPolicyPort { return in[i].Ports }, len(in))
}

// TestIPBlockPeersAreRenderedAndMerged: address edges become ipBlock peers of
// their own rules (IPv4 and IPv6, next to a workload peer's rule); a new port
// of a block joins its rule, an uncanonical CIDR is its masked form, and
// what is written already is not written again.
func TestIPBlockPeersAreRenderedAndMerged(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learn(t, w, 8080) // from frontend
	learnEdges(t, w,
		cidrEdge(v1alpha1.DirectionIngress, "203.0.113.0/24", "tcp", 443),
		cidrEdge(v1alpha1.DirectionIngress, "2001:db8::/64", "udp", 53),
	)
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 {
		t.Fatalf("proposals %+v", got)
	}
	want := "[2001:db8::/64 [UDP/53] 203.0.113.0/24 [TCP/443] app=frontend [TCP/8080]]"
	if rules := fmt.Sprint(ingressOf(got[0].Spec.Kubernetes)); rules != want {
		t.Fatalf("ingress %s, want %s", rules, want)
	}

	// A new port of a block, written as an uncanonical CIDR, merges with what
	// the proposal holds.
	learnEdges(t, w, cidrEdge(v1alpha1.DirectionIngress, "203.0.113.7/24", "tcp", 8443))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	want = "[2001:db8::/64 [UDP/53] 203.0.113.0/24 [TCP/443 TCP/8443] app=frontend [TCP/8080]]"
	if rules := fmt.Sprint(ingressOf(fake.Proposals()[0].Spec.Kubernetes)); rules != want {
		t.Fatalf("ingress %s, want %s", rules, want)
	}

	// A new leader reads the ipBlocks back as they are: nothing to write.
	fake.Follow()
	fake.Lead()
	fake.Drain()
	if fake.Writes["create"] != 1 || fake.Writes["update"] != 1 {
		t.Fatalf("writes %v, want one create and one update", fake.Writes)
	}
}

// TestIPBlockEgress: an egress address edge is a to[].ipBlock peer.
func TestIPBlockEgress(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learnEdges(t, w, cidrEdge(v1alpha1.DirectionEgress, "2001:db8::1/128", "tcp", 443))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 || got[0].Name != "deployment-frontend-egress" {
		t.Fatalf("proposals %+v", got)
	}
	eg := got[0].Spec.Kubernetes.Egress
	if len(eg) != 1 || len(eg[0].To) != 1 || eg[0].To[0].IPBlock == nil || eg[0].To[0].IPBlock.CIDR != "2001:db8::1/128" ||
		eg[0].To[0].PodSelector != nil || eg[0].To[0].NamespaceSelector != nil || len(eg[0].Ports) != 1 {
		t.Fatalf("egress %+v", eg)
	}
}

// TestIPBlockRenderIsCanonical: ipBlock rules read back as they were written,
// and a block with except (not the writer's) is not read.
func TestIPBlockRenderIsCanonical(t *testing.T) {
	rs := rules{}
	rs.add(ipBlockRule("198.51.100.0/24", ports(portRef{"tcp", 443})))
	rs.add(ipBlockRule("2001:db8::/48", ports(portRef{"udp", 53}, portRef{"tcp", 53})))
	spec := specOf(v1alpha1.BackendKubernetes, v1alpha1.TargetRef{Kind: "Deployment", Name: "cart"}, v1alpha1.DirectionIngress,
		&metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}, rs)
	back := rulesOf(&spec)
	if len(back) != 2 || back[ipBlockKey("2001:db8::/48")] == nil || len(back[ipBlockKey("2001:db8::/48")].ports) != 2 {
		t.Fatalf("read back %+v", back)
	}
	spec.Kubernetes.Ingress[0].From[0].IPBlock.Except = []string{"198.51.100.7/32"}
	if back := rulesOf(&spec); len(back) != 1 {
		t.Fatalf("a block with except was read: %+v", back)
	}
}

// TestIPBlockIstio: an Istio address edge is a rule with source.ipBlocks,
// next to a principal's rule, and reads back as it was written.
func TestIPBlockIstio(t *testing.T) {
	rs := rules{}
	rs.add(&rule{principal: "cluster.local/ns/shop/sa/web", ports: ports(portRef{"tcp", 8080})})
	rs.add(ipBlockRule("198.51.100.4/32", ports(portRef{"tcp", 8080}, portRef{"tcp", 9090})))
	target := v1alpha1.TargetRef{Kind: "Deployment", Name: "cart"}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cart"}}
	spec := specOf(v1alpha1.BackendIstio, target, v1alpha1.DirectionIngress, sel, rs)
	r := spec.Istio.Rules
	if len(r) != 2 || fmt.Sprint(r[0].From[0].Source.Principals) != "[cluster.local/ns/shop/sa/web]" ||
		fmt.Sprint(r[1].From[0].Source.IPBlocks) != "[198.51.100.4/32]" || len(r[1].From[0].Source.Principals) != 0 ||
		fmt.Sprint(r[1].To[0].Operation.Ports) != "[8080 9090]" {
		t.Fatalf("istio rules %+v", r)
	}
	if again := specOf(v1alpha1.BackendIstio, target, v1alpha1.DirectionIngress, sel, rulesOf(&spec)); !apiequality.Semantic.DeepEqual(spec, again) {
		t.Fatalf("read back and written again:\n%+v\n%+v", spec, again)
	}
}

// TestIPBlockIstioWrite: an Istio address edge is written into the proposal.
func TestIPBlockIstioWrite(t *testing.T) {
	w, fake := startWriter(t)
	fake.Lead()
	learnEdges(t, w, learning.Edge{Backend: v1alpha1.BackendIstio, Workload: cart, Direction: v1alpha1.DirectionIngress,
		PeerCIDR: "2001:db8::/64", Protocol: "tcp", Port: 8080})
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := fake.Proposals()
	if len(got) != 1 || got[0].Spec.Istio == nil || len(got[0].Spec.Istio.Rules) != 1 ||
		fmt.Sprint(got[0].Spec.Istio.Rules[0].From[0].Source.IPBlocks) != "[2001:db8::/64]" {
		t.Fatalf("proposals %+v", got)
	}
}

// TestIPBlockOverThePortLimitKeepsItsRange: an address block with more ports
// than max_ports_per_peer collapses into a range like any peer, and a new
// writer (a restart) reads that range back instead of rewriting the proposal.
func TestIPBlockOverThePortLimitKeepsItsRange(t *testing.T) {
	w, fake := startWriter(t, func(c *Config) { c.MaxPortsPerPeer = 2 })
	fake.Lead()
	learnEdges(t, w, cidrEdge(v1alpha1.DirectionIngress, "203.0.113.7/32", "tcp", 9000),
		cidrEdge(v1alpha1.DirectionIngress, "203.0.113.7/32", "tcp", 9001),
		cidrEdge(v1alpha1.DirectionIngress, "203.0.113.7/32", "tcp", 9005))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	rule := onlyProposal(t, fake).Spec.Kubernetes.Ingress[0]
	if rule.From[0].IPBlock == nil || len(rule.Ports) != 1 || rule.Ports[0].Port.IntVal != 9000 ||
		rule.Ports[0].EndPort == nil || *rule.Ports[0].EndPort != 9005 {
		t.Fatalf("rule %+v, want 203.0.113.7/32 on TCP 9000-9005", rule)
	}
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.MaxPortsPerPeer = 2
	w2, err := newWriter(exportertest.NewNopSettings(f.Type()), cfg, enforcerextensiontest.FindWriting)
	must(t, err)
	must(t, w2.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())))
	t.Cleanup(w2.stopWatchingSilent)
	learnEdges(t, w2, cidrEdge(v1alpha1.DirectionIngress, "203.0.113.7/32", "tcp", 9001))
	if errs := fake.Drain(); len(errs) != 0 {
		t.Fatal(errs)
	}
	if fake.Writes["update"] != 0 {
		t.Fatalf("writes %v: a port inside the range rewrote the proposal", fake.Writes)
	}
}
