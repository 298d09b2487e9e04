//go:build cluster

package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealCiliumNodes proves nodes mode on the real Cilium agent: two
// replicas find the node through the real hubble-peer Service, one reads the
// agent's Hubble server over mutual TLS with the chart's defaults (Cilium's
// relay client certificate, the agents' server name), learns, and sends the
// leader what it learned over the replicas' own mutual TLS; the leader writes
// the proposals that the application's connections make.
func TestRealCiliumNodes(t *testing.T) {
	requireCilium(t)
	importImages(t)
	// The replicas' key pair for the hop to the leader, from the chart's CA.
	installCertManager(t)
	start := time.Now()
	installChart(t, "controller.provider.name=cilium", "controller.scaleOut.mode=nodes", "controller.scaleOut.replicas=2")
	logsOnFailure(t, namespace+"/"+enforcerPods)
	enforcers := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	holder := waitLeader(t, enforcers)
	t.Logf("nodes mode ready on the Cilium node in %s; leader %s", time.Since(start).Round(100*time.Millisecond), holder)
	// The membership Leases, not their checkpoint shards, which carry the
	// same label.
	waitFor(t, "both replicas' membership Leases", time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", namespace, "get", "leases",
			"-l", "networkenforcer.kubewarden.io/member-of,!networkenforcer.kubewarden.io/shard-of",
			"-o", "jsonpath={.items[*].metadata.name}")
		return len(strings.Fields(out)) == 2
	})

	apply(t, fmt.Sprintf(storeManifests, testpodImage))
	deleteNamespaceAfter(t, "store")
	web := waitReady(t, "store", "app=web", 1, 2*time.Minute)[0]
	api := waitReady(t, "store", "app=api", 1, 2*time.Minute)[0]
	waitReady(t, "store", "app=db", 1, 2*time.Minute)
	for _, c := range []call{
		{web, "api.store.svc.cluster.local:8080"}, {web, "api.store.svc.cluster.local:8080"},
		{api, "db-0.db.store.svc.cluster.local:8080"}, {api, "db-0.db.store.svc.cluster.local:8080"},
	} {
		if d := connect(t, c.from, c.addr); d.Error != "" {
			t.Fatalf("%s to %s: %+v", c.from.Name, c.addr, d)
		}
	}
	want := map[string]edge{
		"deployment-web-egress":  {Class: "Workload", Peer: "store/Deployment/api", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		"deployment-api-ingress": {Class: "Workload", Peer: "store/Deployment/web", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		"deployment-api-egress":  {Class: "Workload", Peer: "store/StatefulSet/db", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
	}
	for name, e := range want {
		waitFor(t, "proposal "+name+" with "+e.String(), 3*time.Minute, func() bool {
			got, _ := observedEdges(t, "workloadnetworkpolicyproposal", name)
			return slices.Contains(got, e)
		})
	}
	t.Logf("nodes mode learned %d proposals %s after the install", len(want), time.Since(start).Round(time.Second))
}
