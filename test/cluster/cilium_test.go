//go:build cluster

package cluster

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCilium runs the README's quickstart for Cilium on the real Cilium node,
// with cert-manager, behind the real hubble-relay and agent; upgrades the
// release to the suite's value set; and follows one policy from real
// connections to enforcement by Cilium and a violation at the default
// collector; then the chart's own NetworkPolicies, a leader takeover and a
// drain's evictions. (The relay's and the agent's restarts are
// TestRealCilium's.)
func TestCilium(t *testing.T) {
	requireCilium(t)
	installCertManager(t)

	// Two enforcers and the default collector.
	quickstartInstall(t, "cilium", 3)
	// After the install: cleanups run last first, so the logs are read before
	// the uninstall.
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay", "cert-manager/app=cert-manager")

	t.Run("install", func(t *testing.T) {
		holder := waitLeader(t, listPods(t, namespace, enforcerPods))
		serviceAccount(t)
		t.Logf("leader %s", holder)
		// The default collector's hop is cert-manager's; the relay's is
		// Cilium's own client Secret, read from kube-system.
		issuerMode(t, map[string]map[string]string{
			"deployment/" + fullname:                {"events-tls": fullname + "-events-client"},
			"deployment/" + fullname + "-collector": {"server-tls": fullname + "-collector-server"},
		})
		collector := listPods(t, namespace, collectorPods)[0]
		server := fullname + "-collector-server"
		c, err := served(t, net.JoinHostPort(collector.IP, "4317"), fullname+"-collector."+namespace+".svc", server, fullname+"-events-client")
		if err != nil || !c.Equal(issued(t, namespace, server)[server]) {
			t.Errorf("the default collector serves OTLP with %v (%v), want the certificate of Secret %s", c, err, server)
		}
		// The leader reads the agent's flows through the relay: the enforcer
		// reached the relay through the chart's Cilium TLS setup.
		waitFor(t, "the leader's flows through the relay", time.Minute, leaderReads(t))
	})
	if t.Failed() {
		return
	}
	t.Run("upgrade", func(t *testing.T) { upgradeToSuiteValues(t, leaderReads(t)) })
	if t.Failed() {
		return
	}

	// The workloads outlive the journey: the failure tests go on with them.
	w := shopWorkloads(t)
	t.Run("journey", func(t *testing.T) { journey(t, w) })
	if t.Failed() {
		return
	}
	memory(t)
	t.Run("chart network policies", func(t *testing.T) { chartPolicies(t, w) })
	t.Run("leader takeover", func(t *testing.T) { takeover(t, w) })
	t.Run("eviction", eviction)
}

// leaderReads is a condition: the leading enforcer pod took flows off its
// stream from the relay. The agent's flows never stop (the kubelet's probes
// of the node's pods), so a new leader's count grows from 0 soon after it
// reads.
func leaderReads(t *testing.T) func() bool {
	return func() bool { return received(leaderPod(t)) > 0 }
}

// The chart values that the suite sets, and what the tests derive from them.
const (
	syncInterval  = 5 * time.Second
	leaseDuration = 15 * time.Second // the chart's default
	retryPeriod   = 2 * time.Second  // the chart's default
	serverPolicy  = "deployment-server-ingress"
	serverAddr    = "server.shop.svc.cluster.local:8080"
)

// journey: real TCP connections, learned through the relay, promoted to
// protect, enforced by Cilium; the dropped connection is a violation in the
// policy's status, an event at the collector and a counter.
func journey(t *testing.T, w workloads) {
	learnServer(t, w, nil)
	promoteServer(t, "protect")
	waitFor(t, "the NetworkPolicy", time.Minute, func() bool {
		_, err := kubectlErr("", "-n", "shop", "get", "networkpolicy", serverPolicy)
		return err == nil
	})
	t.Log(kubectl(t, "-n", "shop", "get", "networkpolicy", serverPolicy, "-o", "yaml"))

	// Cilium enforces it: the client never learned is dropped, on a fresh
	// connection; the learned one still connects.
	var dropped dial
	enforcedAt := time.Now()
	waitFor(t, "Cilium to drop client-b's connection", 30*time.Second, func() bool {
		dropped = connect(t, w.clientB, serverAddr)
		return dropped.blocked()
	})
	t.Logf("Cilium enforced the policy %s after it appeared: %+v", time.Since(enforcedAt).Round(100*time.Millisecond), dropped)
	if d := connect(t, w.clientA, serverAddr); !d.ok() {
		t.Fatalf("client-a under protect: %+v", d)
	}
	// The agent reports the dropped connection itself.
	violationReported(t)
}

// denies is the sum of the collector's network_enforcer_policy_denies series.
func denies(collector pod) float64 {
	return metricSum("http://"+collector.IP+":9464/metrics", "network_enforcer_policy_denies")
}

// metricSum scrapes a Prometheus endpoint from the node, as Prometheus would,
// and sums the series whose name starts with prefix and whose labels hold each
// of labels; 0 when it cannot.
func metricSum(url, prefix string, labels ...string) float64 {
	out, err := httpDo("GET", url, "")
	if err != nil {
		return 0
	}
	var sum float64
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, prefix) || !containsAll(line, labels) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
