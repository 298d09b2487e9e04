//go:build cluster

package cluster

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/kubewarden/network-enforcer/internal/realnodetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// Addresses of the Cilium cluster (internal/realnodetest in Cilium mode).
const (
	outsideNS   = realnodetest.OutsideNS
	outsideAddr = realnodetest.OutsideIP + ":8080"
	apiServer   = "kubernetes.default.svc.cluster.local:443"
	apiPort     = 16443 // the backend of the kubernetes Service, which Cilium translates to
	// stableAfter is the writer's stable_after in the journey.
	stableAfter = 20 * time.Second
)

// waitStable waits for the Stable condition of the store's proposal name and
// logs how long after its last new edge it turned True.
func waitStable(t *testing.T, name string) {
	t.Helper()
	var status, last, since string
	waitFor(t, "proposal "+name+" Stable", stableAfter+2*time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "workloadnetworkpolicyproposal", name, "-o",
			`jsonpath={.status.conditions[?(@.type=="Stable")].status} {.status.lastNewEdge.time} {.status.conditions[?(@.type=="Stable")].lastTransitionTime}`)
		f := strings.Fields(out)
		if len(f) != 3 {
			return false
		}
		status, last, since = f[0], f[1], f[2]
		return status == "True"
	})
	lastT, err1 := time.Parse(time.RFC3339, last)
	sinceT, err2 := time.Parse(time.RFC3339, since)
	if err1 != nil || err2 != nil {
		t.Fatalf("proposal %s: lastNewEdge %q, Stable since %q", name, last, since)
	}
	if d := sinceT.Sub(lastT); d < stableAfter {
		t.Errorf("proposal %s turned Stable %s after its last new edge, within the %s window", name, d, stableAfter)
	} else {
		t.Logf("proposal %s: Stable %s after its last new edge (window %s)", name, d, stableAfter)
	}
}

// waitProposalReady waits, as a user's script would, with kubectl wait, for
// the store's proposal name to be Ready, or, when it saw edges that protect
// would block (blocks), for Ready to be False for that reason
// (BlocksObserved); it logs how long that took after Stable. On a timeout it
// shows the proposal's conditions.
func waitProposalReady(t *testing.T, name string, blocks bool) {
	t.Helper()
	start := time.Now()
	want := "--for=condition=Ready"
	if blocks {
		want += "=false"
	}
	_, err := kubectlErr("", "-n", "store", "wait", want, "--timeout=3m", "wnpp/"+name)
	reason, _ := kubectlErr("", "-n", "store", "get", "wnpp", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
	if err != nil || blocks && reason != "BlocksObserved" {
		out, _ := kubectlErr("", "-n", "store", "get", "wnpp", name, "-o", "jsonpath={.status.conditions}")
		t.Fatalf("proposal %s: Ready reason %q (waited with %s: %v)\nconditions: %s", name, reason, want, err, out)
	}
	t.Logf("proposal %s: Ready's reason %s %s after it was Stable", name, reason, time.Since(start).Round(100*time.Millisecond))
}

// TestRealCilium proves the product on the real Cilium agent as the node's CNI:
// its Hubble flows, read through the real hubble-relay with the chart's default
// Cilium TLS settings, and the NetworkPolicies it renders, enforced by Cilium.
func TestRealCilium(t *testing.T) {
	requireCilium(t)
	importImages(t)
	start := time.Now()
	// A short window for the Stable condition, which the journey waits for
	// before it promotes (a day by default).
	installChart(t, "controller.provider.name=cilium", "controller.learning.stableAfter="+stableAfter.String())
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay", "store/app")

	t.Run("install", func(t *testing.T) {
		enforcers := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
		waitReady(t, namespace, collectorPods, 1, 2*time.Minute)
		holder := waitLeader(t, enforcers)
		t.Logf("ready on the Cilium node in %s; leader %s", time.Since(start).Round(100*time.Millisecond), holder)
	})
	if t.Failed() {
		return
	}
	outside := startOutsideHost(t)
	apply(t, fmt.Sprintf(storeManifests, testpodImage))
	deleteNamespaceAfter(t, "store")
	journeyStart := time.Now()
	meter := startFlowMeter(t)
	realJourney(t, outside)
	meter.stop(t)
	captureFlows(t, journeyStart)
	if t.Failed() {
		return
	}
	t.Run("failures", func(t *testing.T) {
		api := waitReady(t, "store", "app=api", 1, time.Minute)[0]
		web := waitReady(t, "store", "app=web", 1, time.Minute)[0]
		realFailures(t, api, web)
		takeoverDuringLearning(t)
	})
	t.Run("ip_blocks", func(t *testing.T) { ipBlocksJourney(t, outside) })
}

// startOutsideHost runs the tests' TCP server in the cluster's outside test
// host (a network namespace on an address outside the pod and service ranges)
// and stops it, by its PID, at the end of the test.
func startOutsideHost(t *testing.T) string {
	t.Helper()
	cmd := testproc.Command("ip", "netns", "exec", outsideNS, hostTestpod(t), "server")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return outsideAddr
}

// dialFromOutside opens one TCP connection from the outside test host to addr.
func dialFromOutside(t *testing.T, addr string) error {
	t.Helper()
	out, err := testproc.Command("ip", "netns", "exec", outsideNS, hostTestpod(t), "dial", addr).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hostTestpod builds the test pods' program for this machine, to run in the
// outside test host.
func hostTestpod(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := testproc.Command("go", "build", "-o", dir+"/", "./test/cluster/testpod")
	build.Dir, build.Env = env.root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build testpod: %v\n%s", err, out)
	}
	return filepath.Join(dir, "testpod")
}

// edge is one observed edge of a proposal or policy, as the test writes it:
// peer class, peer (namespace/kind/name of a workload, else empty), protocol,
// port and verdict.
type edge struct {
	Class, Peer, Protocol string
	Port                  int32
	Verdict               string
}

func (e edge) String() string {
	return fmt.Sprintf("%s %s %s/%d %s", e.Class, e.Peer, e.Protocol, e.Port, e.Verdict)
}

// observedEdges reads the observed edges of a proposal or policy of store.
func observedEdges(t *testing.T, resource, name string) ([]edge, bool) {
	t.Helper()
	return observedEdgesIn(t, "store", resource, name)
}

// observedEdgesIn reads the observed edges of a proposal or policy of ns.
func observedEdgesIn(t *testing.T, ns, resource, name string) ([]edge, bool) {
	t.Helper()
	out, err := kubectlErr("", "-n", ns, "get", resource, name, "-o", "json")
	if err != nil {
		return nil, false
	}
	var obj struct {
		Status struct {
			Observed []struct {
				Peer struct {
					Class, Namespace, Kind, Name string
				} `json:"peer"`
				Protocol string `json:"protocol"`
				Port     int32  `json:"port"`
				Verdict  string `json:"verdict"`
			} `json:"observed"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	var edges []edge
	for _, o := range obj.Status.Observed {
		e := edge{Class: o.Peer.Class, Protocol: o.Protocol, Port: o.Port, Verdict: o.Verdict}
		if o.Peer.Class == "Workload" {
			e.Peer = o.Peer.Namespace + "/" + o.Peer.Kind + "/" + o.Peer.Name
		}
		if !slices.Contains(edges, e) {
			edges = append(edges, e)
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].String() < edges[j].String() })
	return edges, true
}

// call is one connection that the journey makes: from a pod to an address.
type call struct {
	from pod
	addr string
}

// realJourney is day 1 (real traffic, learned), the promotion of every
// proposal to protect (enforced by Cilium), and what protect and monitor do to
// connections that day 1 never made.
func realJourney(t *testing.T, outside string) {
	web := waitReady(t, "store", "app=web", 1, 2*time.Minute)[0]
	api := waitReady(t, "store", "app=api", 1, 2*time.Minute)[0]
	waitReady(t, "store", "app=db", 1, 2*time.Minute)
	debug := waitReady(t, "store", "app=debug", 1, 2*time.Minute)[0]
	waitReady(t, "store", "app=hostnet", 1, 2*time.Minute)

	const (
		apiAddr = "api.store.svc.cluster.local:8080"
		dbAddr  = "db-0.db.store.svc.cluster.local:8080"
	)
	// Day 1: the application's connections, by Service names through the
	// real CoreDNS; the CronJob's and the host-network DaemonSet's run by
	// themselves.
	day1 := []call{
		{web, apiAddr}, {web, apiAddr}, {api, dbAddr}, {api, dbAddr},
		{debug, apiAddr}, {web, outside}, {web, apiServer},
	}
	for _, c := range day1 {
		if d := connect(t, c.from, c.addr); d.Error != "" {
			t.Fatalf("day 1: %s to %s: %+v", c.from.Name, c.addr, d)
		}
	}
	waitFor(t, "a run of the CronJob", 3*time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "jobs", "-o", "jsonpath={.items[*].status.succeeded}")
		return strings.Contains(out, "1")
	})

	// The test's oracle: what the connections it made, the kubelet's probes
	// (from the node) and the pods' DNS lookups (to CoreDNS over UDP) must
	// give, per proposal. The probes come from the pod's own node, which
	// Cilium lets in whatever the policy (docs/data-plane-verdicts.md): they
	// are Allowed, and the pods stay ready in protect below, which the
	// connections by Service name after promotion prove.
	coredns := "kube-system/Deployment/coredns"
	want := map[string][]edge{
		"deployment-web-egress": {
			{Class: "APIServer", Protocol: "TCP", Port: apiPort, Verdict: "WouldBlock"},
			{Class: "External", Protocol: "TCP", Port: 8080, Verdict: "WouldBlock"},
			{Class: "Workload", Peer: coredns, Protocol: "UDP", Port: 53, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/Deployment/api", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		},
		"deployment-api-ingress": {
			{Class: "BarePod", Protocol: "TCP", Port: 8080, Verdict: "WouldBlock"},
			{Class: "Host", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
			{Class: "Host", Protocol: "TCP", Port: 8081, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/CronJob/report", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/Deployment/web", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		},
		"deployment-api-egress": {
			{Class: "Workload", Peer: coredns, Protocol: "UDP", Port: 53, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/StatefulSet/db", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		},
		"statefulset-db-ingress": {
			{Class: "Host", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/Deployment/api", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		},
		"cronjob-report-egress": {
			{Class: "Workload", Peer: coredns, Protocol: "UDP", Port: 53, Verdict: "Allowed"},
			{Class: "Workload", Peer: "store/Deployment/api", Protocol: "TCP", Port: 8080, Verdict: "Allowed"},
		},
	}
	// web is called only from the node (the kubelet's probes, the test's own
	// requests), which learning leaves out: no ingress proposal for it.
	for name, edges := range want {
		sort.Slice(edges, func(i, j int) bool { return edges[i].String() < edges[j].String() })
		var got []edge
		ok := false
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if got, ok = observedEdges(t, "workloadnetworkpolicyproposal", name); ok && slices.Equal(got, edges) {
				break
			}
			// The poll's own interval, so that the loop does not spin while it
			// waits for the proposal.
			time.Sleep(2 * time.Second)
		}
		if !slices.Equal(got, edges) {
			t.Errorf("proposal %s (found: %v): observed\n  %v\nwant\n  %v", name, ok, got, edges)
		}
	}
	if _, err := kubectlErr("", "-n", "store", "get", "workloadnetworkpolicyproposal", "deployment-web-ingress"); err == nil {
		t.Error("a proposal for web's ingress, whose only peer is the node")
	}
	if t.Failed() {
		t.Log(kubectl(t, "-n", "store", "get", "workloadnetworkpolicyproposals", "-o", "yaml"))
		return
	}

	// Learning settles: each proposal turns Stable once no new edge came for
	// stableAfter, without a flow to wake it, then Ready (covered, complete,
	// blocking nothing observed), or not Ready because protect would block
	// what day 1 saw (web's outside peers, the bare debug pod): promoting
	// those anyway shows below that protect blocks what they said.
	for _, name := range slices.Sorted(maps.Keys(want)) {
		waitStable(t, name)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		waitProposalReady(t, name, slices.ContainsFunc(want[name], func(e edge) bool { return e.Verdict == "WouldBlock" }))
	}

	// Promote every proposal of the application to protect.
	for name := range want {
		kubectl(t, "-n", "store", "label", "workloadnetworkpolicyproposal", name, "networkenforcer.kubewarden.io/promote=protect")
	}
	for name := range want {
		waitFor(t, "the NetworkPolicy "+name, time.Minute, func() bool {
			_, err := kubectlErr("", "-n", "store", "get", "networkpolicy", name)
			return err == nil
		})
	}
	// Cilium enforces: every connection between workloads of day 1 still
	// goes through (on fresh connections), and what the proposals said protect
	// would block is blocked.
	falseDenies := 0
	enforced := time.Now()
	waitFor(t, "Cilium to enforce web's egress", time.Minute, func() bool {
		return connect(t, web, outside).Error != ""
	})
	t.Logf("Cilium enforced the policies %s after they appeared", time.Since(enforced).Round(100*time.Millisecond))
	for i := 0; i < 3; i++ {
		for _, c := range []call{{web, apiAddr}, {api, dbAddr}} {
			if d := connect(t, c.from, c.addr); !d.ok() {
				falseDenies++
				t.Errorf("protect: %s to %s, a day-1 connection, failed: %+v", c.from.Name, c.addr, d)
			}
		}
	}
	t.Logf("false denies in protect: %d of 6 day-1 connections", falseDenies)
	for _, c := range []call{{web, outside}, {web, apiServer}, {debug, apiAddr}} {
		if d := connect(t, c.from, c.addr); d.Error == "" {
			t.Errorf("protect: %s to %s, which the proposals said protect would block, went through", c.from.Name, c.addr)
		}
	}

	// Connections that day 1 never made: a new port (web to api's 8081) and
	// the reverse direction (api to web), refused by Cilium and reported.
	collector := listPods(t, namespace, collectorPods)[0]
	deniesBefore := denies(collector)
	refusedAt := time.Now()
	for _, c := range []call{{web, api.IP + ":8081"}, {api, web.IP + ":8080"}} {
		if d := connect(t, c.from, c.addr); d.Error == "" {
			t.Errorf("protect: %s to %s, never seen on day 1, went through", c.from.Name, c.addr)
		}
	}
	waitViolation(t, "deployment-web-egress", "web", "api", 8081)
	t.Logf("from the refused connection to its violation in the policy status: %s", time.Since(refusedAt).Round(100*time.Millisecond))
	waitViolation(t, "deployment-api-egress", "api", "web", 8080)
	waitFor(t, "the violation events at the collector", time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", namespace, "logs", collector.Name)
		return strings.Count(out, "policy_violation_observed") >= 2 && strings.Contains(out, "8081")
	})
	waitFor(t, "network_enforcer_policy_denies at the collector", time.Minute, func() bool {
		return denies(collector) >= deniesBefore+2
	})

	// Monitor: the same new port is let through, and reported. Both ends'
	// policies go to monitor, since api's ingress would refuse it too.
	for _, name := range []string{"deployment-web-egress", "deployment-api-ingress"} {
		kubectl(t, "-n", "store", "patch", "workloadnetworkpolicy", name, "--type", "merge", "-p", `{"spec":{"mode":"monitor"}}`)
		waitFor(t, name+"'s NetworkPolicy to go in monitor", time.Minute, func() bool {
			_, err := kubectlErr("", "-n", "store", "get", "networkpolicy", name)
			return err != nil
		})
	}
	// 8081 is api's HTTP port: the connection opens, and says nothing.
	waitFor(t, "monitor to let web reach api's 8081", time.Minute, func() bool {
		return connect(t, web, api.IP+":8081").Error == ""
	})
	waitFor(t, "the monitor violation in web's egress policy", 90*time.Second, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "workloadnetworkpolicy", "deployment-web-egress",
			"-o", `jsonpath={range .status.violations[*]}{.action} {.dstPort}{"\n"}{end}`)
		return strings.Contains(out, "monitor 8081")
	})
}

// waitViolation waits for a protect violation from workload src to dst on
// port in the policy's status.
func waitViolation(t *testing.T, policy, src, dst string, port int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the violation %s -> %s:%d in %s", src, dst, port, policy), 90*time.Second, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "workloadnetworkpolicy", policy, "-o",
			`jsonpath={range .status.violations[*]}{.action} {.protocol} {.source.name} {.destination.name} {.dstPort}{"\n"}{end}`)
		return strings.Contains(out, fmt.Sprintf("protect TCP %s %s %d", src, dst, port))
	})
}

// captureFlows writes what the agent emitted during the journey, as `hubble
// observe -o jsonpb` prints it (one GetFlowsResponse a line, proto field
// names), to NETWORK_ENFORCER_CAPTURE when set (`make capture-cilium`),
// gzip-compressed when the name ends in .gz.
func captureFlows(t *testing.T, since time.Time) {
	path := os.Getenv("NETWORK_ENFORCER_CAPTURE")
	if path == "" {
		return
	}
	var buf bytes.Buffer
	var w io.Writer = &buf
	var gz *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		gz = gzip.NewWriter(&buf)
		w = gz
	}
	n := agentFlows(t, since, time.Now(), func(m *observer.GetFlowsResponse) error {
		line, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			return err
		}
		_, err = w.Write(append(line, '\n'))
		return err
	})
	if gz != nil {
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d flows into %s", n, path)
}

// storeManifests are the journey's application in namespace store: web calls
// api, api calls db (a StatefulSet behind a headless Service), a CronJob's pod
// and a DaemonSet on the host network call api, and a bare pod calls api.
// %[1]s is the testpod image.
const storeManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: store
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: store}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [app]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: store}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [app]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: store}
spec:
  selector: {app: api}
  ports: [{name: tcp, port: 8080, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: store}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: tcp, port: 8080, targetPort: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: store}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: %[1]s
          imagePullPolicy: Never
          args: [server]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: store}
spec:
  schedule: "* * * * *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        metadata: {labels: {app: report}}
        spec:
          restartPolicy: Never
          containers:
            - name: report
              image: %[1]s
              imagePullPolicy: Never
              args: [dial, "api.store.svc.cluster.local:8080"]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: hostnet, namespace: store}
spec:
  selector: {matchLabels: {app: hostnet}}
  template:
    metadata: {labels: {app: hostnet}}
    spec:
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      containers:
        - name: hostnet
          image: %[1]s
          imagePullPolicy: Never
          args: [dial, "api.store.svc.cluster.local:8080", "5s"]
---
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: store, labels: {app: debug}}
spec:
  containers:
    - name: debug
      image: %[1]s
      imagePullPolicy: Never
      args: [client]
      readinessProbe: {httpGet: {path: /healthz, port: 8081}, periodSeconds: 2}
`

// ipBlocksJourney: with outside_peers ip_blocks, learning writes the outside
// host's address as an ipBlock, and under protect the connection to it keeps
// working while a peer never seen is refused.
func ipBlocksJourney(t *testing.T, outside string) {
	start := time.Now()
	upgrade(t, "controller.learning.outsidePeers=ipBlocks")
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	leaderPod(t)
	t.Logf("ip_blocks: the enforcers run with it %s after the upgrade began", time.Since(start).Round(100*time.Millisecond))
	apply(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: gateway, namespace: store}
spec:
  replicas: 1
  selector: {matchLabels: {app: gateway}}
  template:
    metadata: {labels: {app: gateway}}
    spec:
      containers:
        - name: app
          image: %s
          imagePullPolicy: Never
          args: [app]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
`, testpodImage))
	gateway := waitReady(t, "store", "app=gateway", 1, 2*time.Minute)[0]
	for range 2 {
		if d := connect(t, gateway, outside); !d.ok() {
			t.Fatalf("day 1: gateway to the outside host: %+v", d)
		}
	}
	host, _, _ := strings.Cut(outside, ":")
	waitFor(t, "the outside host as an ipBlock in gateway's egress proposal", 3*time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "workloadnetworkpolicyproposal", "deployment-gateway-egress",
			"-o", "jsonpath={.spec.kubernetes.egress[*].to[*].ipBlock.cidr} {.status.wouldBlockEdges}")
		return strings.TrimSpace(out) == host+"/32 0"
	})
	kubectl(t, "-n", "store", "label", "workloadnetworkpolicyproposal", "deployment-gateway-egress", "networkenforcer.kubewarden.io/promote=protect")
	waitFor(t, "Cilium to enforce gateway's egress", 2*time.Minute, func() bool {
		return connect(t, gateway, "api.store.svc.cluster.local:8080").Error != ""
	})
	for range 3 {
		if d := connect(t, gateway, outside); !d.ok() {
			t.Errorf("protect with ip_blocks: gateway to the outside host, learned as an ipBlock, failed: %+v", d)
		}
	}
}
