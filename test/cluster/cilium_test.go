//go:build cluster

package cluster

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// TestCilium runs the README's quickstart for Cilium on the real node, with
// cert-manager, behind the real hubble-relay; upgrades the release to the
// suite's value set; and follows one policy from real connections to
// enforcement and a violation at the default collector.
func TestCilium(t *testing.T) {
	require(t)
	installCertManager(t)
	ciliumSecrets(t)
	apply(t, fmt.Sprintf(hubbleManifests, testpodImage, relayImage))
	agent := waitReady(t, "kube-system", "k8s-app=hubble-agent", 1, 2*time.Minute)[0]
	waitReady(t, "kube-system", "k8s-app=hubble-relay", 1, 2*time.Minute)

	// Two enforcers and the default collector.
	quickstartInstall(t, "cilium", 3)
	// After the install: cleanups run last first, so the logs are read before
	// the uninstall.
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay", "kube-system/k8s-app=hubble-agent", "cert-manager/app=cert-manager")

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
		// The relay opened a stream to the agent for the enforcer's: the
		// enforcer reached the relay through the chart's Cilium TLS setup.
		waitFor(t, "the leader's stream through the relay to the agent", time.Minute, func() bool {
			return streams(t, agent) > 0
		})
	})
	if t.Failed() {
		return
	}
	t.Run("upgrade", func(t *testing.T) { upgradeToSuiteValues(t, agent) })
	if t.Failed() {
		return
	}

	// The workloads outlive the journey: the failure tests go on with them.
	w := shopWorkloads(t, agent)
	t.Run("journey", func(t *testing.T) { journey(t, w) })
	if t.Failed() {
		return
	}
	memory(t)
	t.Run("chart network policies", func(t *testing.T) { chartPolicies(t, w) })
	t.Run("relay restart", func(t *testing.T) { relayRestart(t, w) })
	t.Run("leader takeover", func(t *testing.T) { takeover(t, w) })
	t.Run("eviction", eviction)
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
// protect, enforced by kube-router; the refused connection is a violation in
// the policy's status, an event at the collector and a counter.
func journey(t *testing.T, w workloads) {
	report := hubbleReporter(w.agent)
	learnServer(t, w, report)
	promoteServer(t, "protect")
	waitFor(t, "the NetworkPolicy", time.Minute, func() bool {
		_, err := kubectlErr("", "-n", "shop", "get", "networkpolicy", serverPolicy)
		return err == nil
	})
	t.Log(kubectl(t, "-n", "shop", "get", "networkpolicy", serverPolicy, "-o", "yaml"))

	// kube-router enforces it: the client never learned is refused, on a
	// fresh connection; the learned one still connects.
	var refused dial
	enforcedAt := time.Now()
	waitFor(t, "kube-router to refuse client-b", 30*time.Second, func() bool {
		refused = connect(t, w.clientB, serverAddr)
		return refused.refused()
	})
	t.Logf("kube-router enforced the policy %s after it appeared: %+v", time.Since(enforcedAt).Round(100*time.Millisecond), refused)
	if d := connect(t, w.clientA, serverAddr); !d.ok() {
		t.Fatalf("client-a under protect: %+v", d)
	}

	// The refused connection comes back as a dropped flow.
	report(t, w.clientBEnd(), w.serverEnd(), refused, dataplanetest.ConnectionDenied)
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
