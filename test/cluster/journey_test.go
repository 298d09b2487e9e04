//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// workloadManifests are the journey's server in namespace shop, a
// Deployment of the tests' pod program running as a service account of its
// own (its Istio principal). %[1]s is the testpod image.
const workloadManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: server, namespace: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: server
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels: {app: server}
  template:
    metadata:
      labels: {app: server}
    spec:
      serviceAccountName: server
      containers:
        - name: server
          image: %[1]s
          imagePullPolicy: Never
          args: [server]
          ports:
            - {name: tcp, containerPort: 8080}
          readinessProbe:
            tcpSocket: {port: 8080}
            periodSeconds: 2
---
apiVersion: v1
kind: Service
metadata:
  name: server
  namespace: shop
spec:
  selector: {app: server}
  ports:
    - {name: tcp, port: 8080, targetPort: tcp}
`

// clientManifests are a client of the journey, %[2]s, as the server is made.
const clientManifests = `
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: %[2]s, namespace: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: shop
spec:
  replicas: 1
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      serviceAccountName: %[2]s
      containers:
        - name: client
          image: %[1]s
          imagePullPolicy: Never
          args: [client]
          readinessProbe:
            httpGet: {path: /healthz, port: 8081}
            periodSeconds: 2
`

// workloads are the journey's pods.
type workloads struct {
	server, clientA, clientB pod
}

// The journey's ends as the data planes report them.
func (w workloads) serverEnd() dataplanetest.End  { return end(w.server, "server", 1003) }
func (w workloads) clientAEnd() dataplanetest.End { return end(w.clientA, "client-a", 1001) }
func (w workloads) clientBEnd() dataplanetest.End { return end(w.clientB, "client-b", 1002) }

// shopWorkloads creates the journey's workloads, which outlive the test that
// made them only until its end, and waits for their pods.
func shopWorkloads(t *testing.T) workloads {
	t.Helper()
	apply(t, fmt.Sprintf(workloadManifests, testpodImage)+
		fmt.Sprintf(clientManifests, testpodImage, "client-a")+fmt.Sprintf(clientManifests, testpodImage, "client-b"))
	deleteNamespaceAfter(t, "shop")
	return workloads{
		server:  waitReady(t, "shop", "app=server", 1, 2*time.Minute)[0],
		clientA: waitReady(t, "shop", "app=client-a", 1, 2*time.Minute)[0],
		clientB: waitReady(t, "shop", "app=client-b", 1, 2*time.Minute)[0],
	}
}

// reporter hands a connection that the test made from src to dst's port 8080
// to the data plane's pod, which reports it as its data plane does: the
// test's own connection log, with the connection's real addresses. A nil
// reporter is the real Cilium agent's, which sees the connection itself.
type reporter func(t *testing.T, src, dst dataplanetest.End, d dial, c dataplanetest.Connection)

// learnServer makes client-a's real connections to the server, through the
// Service's DNS name, hands each to the data plane, and waits for the
// server's ingress proposal.
func learnServer(t *testing.T, w workloads, report reporter) {
	t.Helper()
	for range 3 {
		d := connect(t, w.clientA, serverAddr)
		if !d.ok() {
			t.Fatalf("client-a to %s before any policy: %+v", serverAddr, d)
		}
		if report != nil {
			report(t, w.clientAEnd(), w.serverEnd(), d, dataplanetest.ConnectionUnenforced)
		}
	}
	waitFor(t, "the server's ingress proposal", 2*time.Minute, func() bool {
		_, err := kubectlErr("", "-n", "shop", "get", "workloadnetworkpolicyproposal", serverPolicy)
		return err == nil
	})
	t.Log(kubectl(t, "-n", "shop", "get", "workloadnetworkpolicyproposal", serverPolicy, "-o", "yaml"))
}

// promoteServer sets the promote label of the server's proposal to mode and
// waits for the policy that it becomes.
func promoteServer(t *testing.T, mode string) {
	t.Helper()
	printed := promoteRendered(t, "shop", serverPolicy, mode)
	waitFor(t, "the server's policy in "+mode+" mode", time.Minute, func() bool {
		out, err := kubectlErr("", "-n", "shop", "get", "workloadnetworkpolicy", serverPolicy, "-o", "jsonpath={.spec.mode}")
		return err == nil && strings.EqualFold(strings.TrimSpace(out), mode)
	})
	if printed != "" { // monitor mode: an AuthorizationPolicy for istio, nothing for the others
		checkRendered(t, printed)
	}
}

// violationReported waits for client-b's violation of the server's policy
// where a user sees it: the policy's status, the policy_violation_observed
// event at the default collector, and the collector's counter.
func violationReported(t *testing.T) {
	t.Helper()
	waitFor(t, "the violation in the policy status", 90*time.Second, func() bool {
		out, err := kubectlErr("", "-n", "shop", "get", "workloadnetworkpolicy", serverPolicy, "-o", "jsonpath={.status.violationCount} {.status.violations[*].source.name}")
		return err == nil && !strings.HasPrefix(out, " ") && strings.Contains(out, "client-b")
	})
	collector := listPods(t, namespace, collectorPods)[0]
	waitFor(t, "the event at the collector", time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", namespace, "logs", collector.Name)
		return strings.Contains(out, "policy_violation_observed") && strings.Contains(out, "client-b")
	})
	waitFor(t, "the counter at the collector", time.Minute, func() bool {
		return denies(collector) >= 1
	})
}

// upgradeToSuiteValues upgrades the release to the suite's values
// (suiteValues: violations and counts reach the status sooner), which rolls
// the enforcers, and waits until the new leader reads the data plane
// (reading).
func upgradeToSuiteValues(t *testing.T, reading func() bool) {
	t.Helper()
	upgrade(t, suiteValues()...)
	waitLeader(t, waitReady(t, namespace, enforcerPods, 2, 3*time.Minute))
	waitFor(t, "the new leader to read the data plane", time.Minute, reading)
}

// streamOpened is a condition for upgradeToSuiteValues: the data plane's pod
// opened a stream more than it had when this is called.
func streamOpened(t *testing.T, source pod) func() bool {
	opened := streams(t, source)
	return func() bool { return streams(t, source) > opened }
}

// monitorJourney: client-a's real connections, learned through the data
// plane; the server's proposal promoted to monitor; client-b's connection,
// which passes (monitor blocks nothing) and which the policy does not allow,
// is a violation in the policy's status, an event at the default collector
// and its counter.
func monitorJourney(t *testing.T, report reporter) {
	w := shopWorkloads(t)
	learnServer(t, w, report)
	promoteServer(t, "monitor")
	d := connect(t, w.clientB, serverAddr)
	if !d.ok() {
		t.Fatalf("client-b to %s under monitor: %+v", serverAddr, d)
	}
	report(t, w.clientBEnd(), w.serverEnd(), d, dataplanetest.ConnectionDryRunDenied)
	violationReported(t)
}
