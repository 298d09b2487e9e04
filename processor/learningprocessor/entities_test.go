package learningprocessor

import (
	"slices"
	"sort"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// startEntities starts a learning processor like startLearning's, with
// outside_peers entities and the Cilium backend given; the fake also knows a
// bare pod at 10.0.0.8.
func startEntities(t *testing.T, backend v1alpha1.Backend) (processor.Logs, *consumertest.LogsSink) {
	t.Helper()
	_, fake, _ := startLearning(t)
	fake.Unresolved("10.0.0.8", workload.UnresolvedBarePod)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	cfg.OutsidePeers, cfg.CiliumBackend = OutsidePeersEntities, backend
	return fake.StartLogsProcessorWithConfig(t, NewFactory(), cfg)
}

// peerOf names an edge's peer: its workload, principal, block, entity or name.
func peerOf(e *learning.Edge) string {
	switch {
	case e.PeerEntity != "":
		return "entity " + string(e.PeerEntity)
	case e.PeerName != "":
		return "name " + e.PeerName
	case e.PeerCIDR != "":
		return "block " + e.PeerCIDR
	case e.Principal != "":
		return "principal " + e.Principal
	}
	return "workload " + e.Peer.String()
}

// edgeList lists edges as "<workload>/<direction> <peer> <port>", sorted.
func edgeList(edges []learning.Edge) []string {
	var out []string
	for i := range edges {
		e := &edges[i]
		out = append(out, e.Workload.String()+"/"+string(e.Direction)+" "+peerOf(e)+" "+string(e.Backend))
	}
	sort.Strings(out)
	return out
}

// TestEntitiesLearnOutsidePeersAsWhatTheyAre: with entities, the API server
// is learned as the API server, the pod's own node (calling or called) as the
// Host, a remote node as the RemoteNodes, a host-network pod as the nodes,
// an outside service by each of the names the data plane gives for it, and
// an outside address without a name as its block: no node entity wider than
// what was seen. The edges have the Cilium backend configured.
func TestEntitiesLearnOutsidePeersAsWhatTheyAre(t *testing.T) {
	p, sink := startEntities(t, v1alpha1.BackendCilium)
	named := external("10.0.0.1", "203.0.113.7", "", flow.ExternalWorld)
	named.Destination.Names = []string{"api.example.com", "cdn.example.net"}
	consume(t, p,
		external("10.0.0.1", "192.0.2.10", "", flow.ExternalAPIServer),
		external("192.0.2.11", "10.0.0.2", flow.ExternalHost, ""),
		external("10.0.0.1", "192.0.2.11", "", flow.ExternalHost),
		external("192.0.2.12", "10.0.0.2", flow.ExternalRemoteNode, ""),
		ciliumFlow("10.0.0.9", "10.0.0.2", 443, flow.OutcomeAllowed), // host network
		named,
		external("10.0.0.1", "198.51.100.4", "", flow.ExternalWorld),
	)
	edges, _ := emitted(sink)
	want := []string{
		"shop/Deployment/cart/Ingress entity Host cilium",
		"shop/Deployment/cart/Ingress entity Nodes cilium",
		"shop/Deployment/cart/Ingress entity RemoteNodes cilium",
		"shop/Deployment/frontend/Egress block 198.51.100.4/32 cilium",
		"shop/Deployment/frontend/Egress entity APIServer cilium",
		"shop/Deployment/frontend/Egress entity Host cilium",
		"shop/Deployment/frontend/Egress name api.example.com cilium",
		"shop/Deployment/frontend/Egress name cdn.example.net cilium",
	}
	if got := slices.Compact(edgeList(edges)); !slices.Equal(got, want) {
		t.Fatalf("edges\n%v\nwant\n%v", got, want)
	}
}

// TestEntitiesEvidence: a named outside peer's flows are counted once, on
// its first name's edge, whose class is External; the API server's edge is
// of class APIServer, a remote node's (entity RemoteNodes) of class
// RemoteNode.
func TestEntitiesEvidence(t *testing.T) {
	p, sink := startEntities(t, v1alpha1.BackendKubernetes)
	named := external("10.0.0.1", "203.0.113.7", "", flow.ExternalWorld)
	named.Destination.Names = []string{"api.example.com", "cdn.example.net"}
	consume(t, p, named, named,
		external("10.0.0.1", "192.0.2.10", "", flow.ExternalAPIServer),
		external("192.0.2.12", "10.0.0.2", flow.ExternalRemoteNode, ""))
	observed := map[string]learning.Observation{}
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var o learning.Observation
			if learned, ok := o.ReadFrom(lr); learned {
				if !ok {
					o.Class = "none"
				}
				observed[peerOf(&o.Edge)] = o
			}
		})
	}
	for peer, want := range map[string]struct {
		class v1alpha1.PeerClass
		flows int64
	}{
		"name api.example.com": {v1alpha1.PeerClassExternal, 2},
		"name cdn.example.net": {"none", 0},
		"entity APIServer":     {v1alpha1.PeerClassAPIServer, 1},
		"entity RemoteNodes":   {v1alpha1.PeerClassRemoteNode, 1},
	} {
		o, ok := observed[peer]
		if !ok || o.Class != want.class || o.Flows != want.flows {
			t.Errorf("%s: observed %+v (%v), want class %s with %d flows", peer, o, ok, want.class, want.flows)
		}
		if ok && o.Backend != v1alpha1.BackendKubernetes {
			t.Errorf("%s: backend %s, want the default kubernetes", peer, o.Backend)
		}
	}
}

// TestEntitiesNeverOfAPod: a named end whose address is a pod's, and ends
// that are pods, teach no outside peer.
func TestEntitiesNeverOfAPod(t *testing.T) {
	p, sink := startEntities(t, v1alpha1.BackendCilium)
	named := external("10.0.0.1", "10.0.0.8", "", flow.ExternalWorld)
	named.Destination.Names = []string{"api.example.com"}
	consume(t, p, named)
	edges, _ := emitted(sink)
	for _, e := range edges {
		if e.PeerName != "" || e.PeerEntity != "" || e.PeerCIDR != "" {
			t.Errorf("an outside edge for a pod's address: %+v", e)
		}
	}
}
