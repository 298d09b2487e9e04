package learningprocessor

import (
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// startOutside starts a learning processor like startLearning's, with
// outside_peers ip_blocks and the prefix lengths given; the fake also knows a
// bare pod at 10.0.0.8.
func startOutside(t *testing.T, v4, v6 int) (processor.Logs, *consumertest.LogsSink) {
	t.Helper()
	_, fake, _ := startLearning(t)
	fake.Unresolved("10.0.0.8", workload.UnresolvedBarePod)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.OutsidePeers, cfg.IPv4Prefix, cfg.IPv6Prefix = OutsidePeersIPBlocks, v4, v6
	return fake.StartLogsProcessorWithConfig(t, NewFactory(), cfg)
}

func external(src, dst string, srcOutside, dstOutside flow.External) flow.Record {
	f := ciliumFlow(src, dst, 443, flow.OutcomeAllowed)
	f.Source.External, f.Destination.External = srcOutside, dstOutside
	return f
}

// cidrEdges are the edges with an address peer, as "<workload>/<direction> <cidr>".
func cidrEdges(t *testing.T, edges []learning.Edge) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, e := range edges {
		if e.PeerCIDR == "" {
			t.Errorf("an edge with a workload peer %+v", e)
			continue
		}
		if e.Peer.Name != "" || e.Principal != "" {
			t.Errorf("an address edge with another peer too %+v", e)
		}
		got[e.Workload.String()+"/"+string(e.Direction)+" "+e.PeerCIDR] = true
	}
	return got
}

// TestIPBlocksLearnOutsidePeersAsAddresses: with ip_blocks, an external source
// (IPv4), an external destination (IPv6), a node (calling and called) and a
// host-network pod are learned as the one address each; the outside end's
// own side teaches nothing.
func TestIPBlocksLearnOutsidePeersAsAddresses(t *testing.T) {
	p, sink := startOutside(t, 32, 128)
	consume(t, p,
		external("203.0.113.7", "10.0.0.2", flow.ExternalWorld, ""),
		external("10.0.0.1", "2001:db8::1", "", flow.ExternalWorld),
		external("192.168.1.5", "10.0.0.2", flow.ExternalHost, ""),
		external("10.0.0.1", "192.168.1.6", "", flow.ExternalHost),
		ciliumFlow("10.0.0.9", "10.0.0.2", 443, flow.OutcomeAllowed), // host network
	)
	edges, _ := emitted(sink)
	want := map[string]bool{
		"shop/Deployment/cart/Ingress 203.0.113.7/32":     true,
		"shop/Deployment/frontend/Egress 2001:db8::1/128": true,
		"shop/Deployment/frontend/Egress 192.168.1.6/32":  true,
		"shop/Deployment/cart/Ingress 192.168.1.5/32":     true,
		"shop/Deployment/cart/Ingress 10.0.0.9/32":        true,
	}
	got := cidrEdges(t, edges)
	if len(got) != len(want) || len(edges) != len(want) {
		t.Fatalf("edges %v, want %v", got, want)
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing %s in %v", k, got)
		}
	}
	for _, e := range edges {
		if e.Backend != v1alpha1.BackendKubernetes || e.Protocol != "tcp" || e.Port != 443 {
			t.Errorf("edge %+v", e)
		}
	}
}

// TestIPBlocksCutToThePrefix: two addresses of one /24 are one edge of that
// block; an IPv6 address is cut to its /64, an IPv4-mapped one is IPv4.
func TestIPBlocksCutToThePrefix(t *testing.T) {
	p, sink := startOutside(t, 24, 64)
	consume(t, p,
		external("203.0.113.7", "10.0.0.2", flow.ExternalWorld, ""),
		external("203.0.113.9", "10.0.0.2", flow.ExternalWorld, ""),
		external("::ffff:198.51.100.4", "10.0.0.2", flow.ExternalWorld, ""),
		external("2001:db8::7:1", "10.0.0.2", flow.ExternalWorld, ""),
	)
	edges, _ := emitted(sink)
	got := cidrEdges(t, edges)
	for _, k := range []string{"shop/Deployment/cart/Ingress 203.0.113.0/24", "shop/Deployment/cart/Ingress 198.51.100.0/24",
		"shop/Deployment/cart/Ingress 2001:db8::/64"} {
		if !got[k] {
			t.Errorf("missing %s in %v", k, got)
		}
	}
	if len(edges) != 3 {
		t.Fatalf("edges %v, want three blocks", got)
	}
}

// TestIPBlocksNeverOfAPod: an end that the data plane calls external but whose
// address is a pod's (a workload's, a bare pod's), an address that no pod has
// but that nothing calls outside (a pod the cache may not know yet), and a
// Goldmane name teach nothing, even with ip_blocks.
func TestIPBlocksNeverOfAPod(t *testing.T) {
	p, sink := startOutside(t, 32, 128)
	consume(t, p,
		external("10.0.0.1", "10.0.0.2", flow.ExternalWorld, ""),
		external("10.0.0.8", "10.0.0.2", flow.ExternalHost, ""),
		ciliumFlow("10.0.0.77", "10.0.0.2", 443, flow.OutcomeAllowed),
		external("pub", "10.0.0.2", flow.ExternalWorld, ""),
	)
	if edges, candidates := emitted(sink); len(edges) != 0 || len(candidates) != 0 {
		t.Fatalf("edges %+v, candidates %v", edges, candidates)
	}
}

// TestDropIsTheDefault: without outside_peers, an external peer teaches
// nothing.
func TestDropIsTheDefault(t *testing.T) {
	if c := createDefaultConfig().(*Config); c.OutsidePeers != OutsidePeersDrop {
		t.Fatalf("default outside_peers %q", c.OutsidePeers)
	}
	p, _, sink := startLearning(t)
	consume(t, p, external("203.0.113.7", "10.0.0.2", flow.ExternalWorld, ""))
	if edges, _ := emitted(sink); len(edges) != 0 {
		t.Fatalf("edges %+v", edges)
	}
}

// TestIPBlocksIstioSourceWithoutIdentity: an Istio source without an identity
// is learned as its address, unless its address is a pod's (a pod outside the
// mesh, which should join it instead).
func TestIPBlocksIstioSourceWithoutIdentity(t *testing.T) {
	p, sink := startOutside(t, 32, 128)
	istio := func(src string) flow.Record {
		f := ciliumFlow(src, "10.0.0.2", 8080, flow.OutcomeAllowed)
		f.Provider = flow.ProviderIstio
		return f
	}
	consume(t, p, istio("198.51.100.4"), istio("10.0.0.1"), istio("10.0.0.8"))
	edges, _ := emitted(sink)
	if len(edges) != 1 || edges[0].Backend != v1alpha1.BackendIstio || edges[0].PeerCIDR != "198.51.100.4/32" ||
		edges[0].Workload != cart || edges[0].Direction != v1alpha1.DirectionIngress || edges[0].Principal != "" {
		t.Fatalf("edges %+v", edges)
	}
}

// TestAddressEdgeRoundTrips: an address edge reads back as written.
func TestAddressEdgeRoundTrips(t *testing.T) {
	e := learning.Edge{Backend: v1alpha1.BackendKubernetes, Workload: cart, Direction: v1alpha1.DirectionIngress,
		PeerCIDR: "2001:db8::/64", Protocol: "udp", Port: 53}
	ld := plog.NewLogs()
	e.AppendTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty())
	var back learning.Edge
	flow.EachLogRecord(ld, func(lr plog.LogRecord) { back.ReadFrom(lr) })
	if back != e {
		t.Fatalf("read back %+v, want %+v", back, e)
	}
}
