//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"

	"github.com/kubewarden/network-enforcer/internal/realnodetest"
)

// The address reuse test's namespaces: a's client calls b's server, and
// c's pods take the client's address once it is gone.
const (
	reuseA = "reuse-a"
	reuseB = "reuse-b"
	reuseC = "reuse-c"
	// reuseServer is b's server by its Service name.
	reuseServer = "server." + reuseB + ".svc.cluster.local:8080"
	reuseEcho   = "echo." + reuseC + ".svc.cluster.local:8080"
	// backfillWindow is the Hubble receiver's backfill (since), which the
	// chart leaves at its default: what a new leader without a hand-off
	// reads of the relay's buffer.
	backfillWindow = 5 * time.Minute
	// fillerStep is how many of c's pods the test adds at a time.
	fillerStep = 4
)

// TestRealCiliumAddressReuse proves attribution at the flow's time on the
// real Cilium node, with a real address reuse. a/client calls b/server:8080;
// a/client's pod is deleted (its Deployment scaled to 0) and its address
// handed to a pod of c/other (the node's pod range is a /26, so the test
// starts c's pods until one has it); c/other calls c/echo, never b; then
// the enforcer crashes (both replicas killed, no graceful hand-off), and the
// new leader reads the relay's backfill, which holds the deleted pod's flows
// under its name. What a user sees: no proposal of c has an edge to
// b/server, b's ingress proposal has no peer of c, and the replayed flows
// count for a's edge, as the data plane named them (a's Deployment, which
// the pod no longer known resolves to), with no coverage gap. Resolving the
// deleted pod through its address, which c/other holds by then, would put
// a's edges on c/other.
func TestRealCiliumAddressReuse(t *testing.T) {
	requireCilium(t)
	importImages(t)
	start := time.Now()
	installChart(t, "controller.provider.name=cilium")
	logsOnFailure(t, namespace+"/"+enforcerPods, "kube-system/k8s-app=hubble-relay")
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	waitReady(t, namespace, collectorPods, 1, 2*time.Minute)
	leaderPod(t)
	apply(t, fmt.Sprintf(reuseManifests, testpodImage))
	for _, ns := range []string{reuseA, reuseB, reuseC} {
		deleteNamespaceAfter(t, ns)
	}
	client := waitReady(t, reuseA, "app=client", 1, 2*time.Minute)[0]
	waitReady(t, reuseB, "app=server", 1, 2*time.Minute)
	waitReady(t, reuseC, "app=echo", 1, 2*time.Minute)
	pool := nodePool(t)
	t.Logf("the node's pod range %s: %d addresses for pods, %d in use; the kubelet admits %d pods, %d run (%s after the test began)",
		pool.cidr, pool.size, pool.used, pool.maxPods, pool.pods, time.Since(start).Round(100*time.Millisecond))
	// Starting pods until one has a given address takes pods to use every
	// free address: the node must admit about as many (Cilium mode gives
	// it a /26).
	if free, room := pool.size-pool.used, pool.maxPods-pool.pods; free > room+fillerStep {
		t.Fatalf("the node's pod range %s has %d free addresses and the node admits %d more pods: too many addresses to force a reuse", pool.cidr, free, room)
	}

	// Day 1: a/client calls b/server by its Service name, each a fresh
	// connection, learned as a's egress and b's ingress; once both
	// proposals show them, a/client calls again, just before its pod goes,
	// so that every call is in the backfill that the new leader reads.
	aEdge := edgeRef{Peer: reuseB + "/Deployment/server", Port: 8080}
	bEdge := edgeRef{Peer: reuseA + "/Deployment/client", Port: 8080}
	cEdge := edgeRef{Peer: reuseC + "/Deployment/echo", Port: 8080}
	const aProposal, bProposal, cProposal = "deployment-client-egress", "deployment-server-ingress", "deployment-other-egress"
	calls := 0
	call := func(from pod, addr string, n int) {
		t.Helper()
		for range n {
			if d := connect(t, from, addr); !d.ok() {
				t.Fatalf("%s to %s: %+v", from.Name, addr, d)
			}
		}
	}
	firstCall := time.Now()
	call(client, reuseServer, 10)
	calls += 10
	waitFor(t, "a's calls in a's and b's proposals", 3*time.Minute, func() bool {
		return proposalFlows(t, reuseA, aProposal, aEdge) >= int64(calls) && proposalFlows(t, reuseB, bProposal, bEdge) >= int64(calls)
	})
	learned := time.Since(firstCall)
	call(client, reuseServer, 10)
	calls += 10
	lastCall := time.Now()
	t.Logf("day 1: a/client (%s at %s) called b/server %d times; the first 10 were in both proposals %s after the first call",
		client.Name, client.IP, calls, learned.Round(100*time.Millisecond))

	// a/client's pod goes (its Deployment stays, at 0 replicas), and its
	// address goes to a pod of c/other.
	deleted := time.Now()
	kubectl(t, "-n", reuseA, "scale", "deployment", "client", "--replicas=0")
	if out, err := kubectlErr("", "-n", reuseA, "wait", "--for=delete", "pod/"+client.Name, "--timeout=2m"); err != nil {
		t.Fatalf("a/client's pod %s did not go: %v %s", client.Name, err, out)
	}
	gone := time.Now()
	holder, fill := takeAddress(t, client.IP, pool)
	t.Logf("reuse: %s of the deleted %s went to %s after %d of c/other's pods (%d added in %d steps of up to %d, %d replaced when the node admitted no more); "+
		"%s after the deletion began: %s for the pod to go, %s to start pods until one had it; %s more until it was c/other's only pod",
		client.IP, client.Name, holder.Name, fill.pods, fill.added, fill.steps, fillerStep, fill.replaced,
		(gone.Sub(deleted) + fill.took).Round(100*time.Millisecond), gone.Sub(deleted).Round(100*time.Millisecond),
		fill.took.Round(100*time.Millisecond), fill.kept.Round(100*time.Millisecond))

	// c/other, at a/client's old address, calls c/echo and never b.
	call(holder, reuseEcho, 3)
	var a0, b0, e0 int64
	waitFor(t, "every call in the proposals", 3*time.Minute, func() bool {
		a0, b0, e0 = proposalFlows(t, reuseA, aProposal, aEdge), proposalFlows(t, reuseB, bProposal, bEdge), proposalFlows(t, reuseC, cProposal, cEdge)
		return a0 >= int64(calls) && b0 >= int64(calls) && e0 >= 3
	})
	// Time must pass because a write round that has nothing more to write
	// leaves no trace: two status syncs, either of which would write a flow
	// counted twice.
	time.Sleep(2 * syncInterval)
	a0, b0, e0 = proposalFlows(t, reuseA, aProposal, aEdge), proposalFlows(t, reuseB, bProposal, bEdge), proposalFlows(t, reuseC, cProposal, cEdge)
	t.Logf("before the crash: a's edge to b/server counts %d flows, b's from a %d, c/other's to c/echo %d", a0, b0, e0)
	checkNoCrossing(t, "before the crash")

	// The enforcer crashes: both replicas' containers killed at once, so
	// that neither hands the relay's position over (a graceful stop does,
	// and the next leader then counts nothing that this one counted) and
	// both start with an empty cache, which never saw a/client's pod.
	crashed, leaderAt := crashEnforcers(t)
	t.Logf("crash: a new leader %s after the containers were killed; a/client's calls were %s to %s before, within the backfill of %s",
		leaderAt.Sub(crashed).Round(100*time.Millisecond), leaderAt.Sub(firstCall).Round(time.Second), leaderAt.Sub(lastCall).Round(time.Second), backfillWindow)
	if age := leaderAt.Sub(firstCall); age > backfillWindow-30*time.Second {
		t.Fatalf("a/client's first call was %s before the new leader read the relay, too close to the backfill of %s for the replay to hold every call", age, backfillWindow)
	}
	replay := replayOf(t, reuseA, client.Name, leaderAt.Add(-backfillWindow), leaderAt)
	t.Logf("replay: the agent's buffer holds %d flows naming the deleted pod %s/%s in the new leader's backfill, of %d connections to port 8080 (%d calls made)",
		replay.flows, reuseA, client.Name, replay.conns, calls)

	// c/other calls c/echo again: once the new leader counts these, it has
	// read the backfill, which comes before them.
	after := time.Now()
	call(holder, reuseEcho, 3)
	waitFor(t, "c/other's calls after the crash in "+cProposal, 3*time.Minute, func() bool {
		e, ok := proposalEdges(t, reuseC, cProposal).find(cEdge)
		return ok && !e.LastSeen.Before(after.Truncate(time.Second))
	})
	// Time must pass because a write round that has nothing more to write
	// leaves no trace: two status syncs, either of which would write a flow
	// counted twice.
	time.Sleep(2 * syncInterval)

	checkNoCrossing(t, "after the replay")
	a1 := proposalFlows(t, reuseA, aProposal, aEdge)
	b1 := proposalFlows(t, reuseB, bProposal, bEdge)
	e1 := proposalFlows(t, reuseC, cProposal, cEdge)
	// The crash lost the hand-off: the new leader counts again what the
	// backfill holds, every connection of the deleted pod for a.
	if a1-a0 != int64(replay.conns) {
		t.Errorf("%s/%s: %d more flows to %s after the replay (%d to %d), want %d: each replayed connection of the deleted pod counted for a",
			reuseA, aProposal, a1-a0, aEdge, a0, a1, replay.conns)
	}
	if b1-b0 != int64(replay.conns) {
		t.Errorf("%s/%s: %d more flows from %s after the replay (%d to %d), want %d", reuseB, bProposal, b1-b0, bEdge, b0, b1, replay.conns)
	}
	if replay.conns == 0 {
		t.Errorf("the backfill held no connection of the deleted pod: nothing was replayed")
	}
	for _, p := range []struct{ ns, name string }{{reuseA, aProposal}, {reuseB, bProposal}} {
		if gaps := proposalEdges(t, p.ns, p.name).gaps; strings.Contains(gaps, "Unattributed") {
			t.Errorf("%s/%s: coverage gaps %s: the deleted pod's flows were not attributed", p.ns, p.name, gaps)
		}
	}
	leader := leaderPod(t)
	gaps := enforcerMetricWith(leader, "network_enforcer_learning_coverage_gaps", `cause="Unattributed"`)
	noPod := enforcerMetricWith(leader, "network_enforcer_learning_dropped", `reason="target_no_pod"`) +
		enforcerMetricWith(leader, "network_enforcer_learning_dropped", `reason="peer_no_pod"`)
	t.Logf("replay: the new leader counted %d more flows of a's edge to b/server (%d to %d) and %d more of b's edge from a (%d to %d); "+
		"%d more of c/other's edge to c/echo (%d to %d, 3 of them made after the crash); its Unattributed coverage gaps %.0f, flow sides dropped without a pod %.0f",
		a1-a0, a0, a1, b1-b0, b0, b1, e1-e0, e0, e1, gaps, noPod)
	t.Logf("the test took %s", time.Since(start).Round(time.Second))
}

// reuseManifests are the address reuse test's workloads: a/client (a
// caller), b/server, c/echo (servers) and c/other (a caller, at 0 replicas
// until the test starts its pods). %[1]s is the testpod image.
const reuseManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: ` + reuseA + `}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + reuseB + `}
---
apiVersion: v1
kind: Namespace
metadata: {name: ` + reuseC + `}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: client, namespace: ` + reuseA + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [client]
          readinessProbe: {tcpSocket: {port: 8081}, periodSeconds: 2}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: ` + reuseB + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: server}}
  template:
    metadata: {labels: {app: server}}
    spec:
      containers:
        - name: server
          image: %[1]s
          imagePullPolicy: Never
          args: [server]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: server, namespace: ` + reuseB + `}
spec:
  selector: {app: server}
  ports: [{name: tcp, port: 8080, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: echo, namespace: ` + reuseC + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: echo}}
  template:
    metadata: {labels: {app: echo}}
    spec:
      containers:
        - name: server
          image: %[1]s
          imagePullPolicy: Never
          args: [server]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ` + reuseC + `}
spec:
  selector: {app: echo}
  ports: [{name: tcp, port: 8080, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: other, namespace: ` + reuseC + `}
spec:
  replicas: 0
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: app
          image: %[1]s
          imagePullPolicy: Never
          args: [client]
          readinessProbe: {tcpSocket: {port: 8081}, periodSeconds: 2}
`

// pool is the node's pod range and what uses it.
type pool struct {
	cidr string
	// size is the addresses that pods can have: the range without its
	// first and last address and the agent's cilium_host.
	size int
	// used is the addresses that pods have.
	used int
	// maxPods is the pods that the kubelet admits, and pods those that run
	// on the node.
	maxPods, pods int
}

func nodePool(t *testing.T) pool {
	t.Helper()
	out := kubectl(t, "get", "node", realnodetest.NodeName, "-o", "jsonpath={.spec.podCIDR} {.status.allocatable.pods}")
	var p pool
	f := strings.Fields(out)
	if len(f) != 2 {
		t.Fatalf("the node's pod range and allocatable pods: %q", out)
	}
	p.cidr = f[0]
	prefix, err := netip.ParsePrefix(p.cidr)
	if err != nil {
		t.Fatal(err)
	}
	p.size = 1<<(prefix.Addr().BitLen()-prefix.Bits()) - 3
	if p.maxPods, err = strconv.Atoi(f[1]); err != nil {
		t.Fatal(err)
	}
	for _, q := range nodePods(t) {
		p.pods++
		if q.IP != "" && !q.HostNetwork && prefix.Contains(netip.MustParseAddr(q.IP)) {
			p.used++
		}
	}
	return p
}

// nodePod is what the test reads of any pod of the node.
type nodePod struct {
	Namespace, Name, IP string
	HostNetwork         bool
	Deleting, Ready     bool
	Labels              map[string]string
}

// nodePods lists the pods that hold a place on the node: every pod of the
// cluster that has not ended.
func nodePods(t *testing.T) []nodePod {
	t.Helper()
	out := kubectl(t, "get", "pods", "-A", "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace         string            `json:"namespace"`
				Name              string            `json:"name"`
				DeletionTimestamp string            `json:"deletionTimestamp"`
				Labels            map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				HostNetwork bool `json:"hostNetwork"`
			} `json:"spec"`
			Status struct {
				Phase      string `json:"phase"`
				PodIP      string `json:"podIP"`
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var pods []nodePod
	for _, it := range list.Items {
		if it.Status.Phase == "Succeeded" || it.Status.Phase == "Failed" {
			continue
		}
		p := nodePod{Namespace: it.Metadata.Namespace, Name: it.Metadata.Name, IP: it.Status.PodIP,
			HostNetwork: it.Spec.HostNetwork, Deleting: it.Metadata.DeletionTimestamp != "", Labels: it.Metadata.Labels}
		for _, c := range it.Status.Conditions {
			if c.Type == "Ready" {
				p.Ready = c.Status == "True"
			}
		}
		pods = append(pods, p)
	}
	return pods
}

// fill is how the address went to c/other: the pods it took (added, and
// replaced when the node admitted no more), and how long.
type fill struct {
	pods, added, steps, replaced int
	// took is until a pod had the address, kept until it was the only
	// one left.
	took, kept time.Duration
}

// takeAddress starts pods of c/other until one has addr, which no pod has
// now; then keeps that one (the highest deletion cost, Ready) and lets the
// others go, and returns it. The agent picks a free address at random, so it
// adds fillerStep pods at a time while the node admits them; once it admits
// no more (it admits fewer pods than its range has addresses), it replaces
// one pod that does not have addr at a time.
func takeAddress(t *testing.T, addr string, p pool) (pod, fill) {
	t.Helper()
	var f fill
	start := time.Now()
	others := 0
	for _, q := range nodePods(t) {
		if q.Namespace != reuseC || q.Labels["app"] != "other" {
			others++
		}
	}
	room := p.maxPods - others
	replicas := 0
	var holder string
	deadline := time.Now().Add(4 * time.Minute)
	for holder == "" {
		if time.Now().After(deadline) {
			out, _ := kubectlErr("", "-n", reuseC, "get", "pods", "-o", "wide")
			t.Fatalf("no pod had %s after %s with %d of c/other's pods:\n%s", addr, time.Since(start).Round(time.Second), f.pods, out)
		}
		var ours []nodePod
		for _, q := range nodePods(t) {
			if q.IP == addr && !q.Deleting {
				if q.Namespace != reuseC || q.Labels["app"] != "other" {
					t.Fatalf("%s went to %s/%s, which the test did not start for it", addr, q.Namespace, q.Name)
				}
				holder = q.Name
			}
			if q.Namespace == reuseC && q.Labels["app"] == "other" && !q.Deleting {
				ours = append(ours, q)
			}
		}
		if holder != "" {
			break
		}
		waiting := len(ours) < replicas
		for _, q := range ours {
			waiting = waiting || q.IP == ""
		}
		switch {
		case waiting:
			// The poll's own interval, so that the loop does not spin while the
			// pods start.
			time.Sleep(300 * time.Millisecond)
		case replicas < room:
			n := min(fillerStep, room-replicas)
			replicas += n
			f.added += n
			f.pods += n
			f.steps++
			kubectl(t, "-n", reuseC, "scale", "deployment", "other", "--replicas="+strconv.Itoa(replicas))
		default:
			// The node admits no more pods: addr is among the few free
			// addresses left. A pod that goes frees its own; its
			// replacement takes one of them.
			kubectl(t, "-n", reuseC, "delete", "pod", ours[0].Name, "--wait=false")
			f.replaced++
			f.pods++
		}
	}
	f.took = time.Since(start)
	// Keep the holder: the ReplicaSet removes pods that are not Ready
	// first, then those of the lowest deletion cost.
	var kept pod
	waitFor(t, "the pod at "+addr+" Ready", time.Minute, func() bool {
		for _, q := range listPods(t, reuseC, "app=other") {
			if q.Name == holder && q.ready() {
				kept = q
				return true
			}
		}
		return false
	})
	kubectl(t, "-n", reuseC, "annotate", "pod", holder, "controller.kubernetes.io/pod-deletion-cost=1000")
	kubectl(t, "-n", reuseC, "scale", "deployment", "other", "--replicas=1")
	waitFor(t, "c/other down to the pod at "+addr, 2*time.Minute, func() bool {
		var live []string
		for _, q := range listPods(t, reuseC, "app=other") {
			if q.DeletionTimestamp == "" {
				live = append(live, q.Name)
			}
		}
		if len(live) == 1 && live[0] != holder {
			t.Fatalf("c/other kept %s, not %s at %s", live[0], holder, addr)
		}
		return len(live) == 1
	})
	if kept.IP != addr {
		t.Fatalf("%s has %s, want %s", kept.Name, kept.IP, addr)
	}
	f.kept = time.Since(start) - f.took
	return kept, f
}

// crashEnforcers kills the containers of both enforcer pods at once and
// waits for a new leader; it returns when it killed them and when the new
// leader took the Lease.
func crashEnforcers(t *testing.T) (crashed, led time.Time) {
	t.Helper()
	before := leader(t)
	transitions := leaseTransitions(t)
	out := kubectl(t, "-n", namespace, "get", "pods", "-l", enforcerPods, "-o",
		`jsonpath={range .items[*]}{.status.containerStatuses[?(@.name=="enforcer")].containerID}{"\n"}{end}`)
	ids := strings.Fields(out)
	if len(ids) != 2 {
		t.Fatalf("the enforcer pods' containers: %q", out)
	}
	crashed = time.Now()
	for _, id := range ids {
		if err := realnodetest.KillContainer(realnodetest.Config{Root: env.root}, id); err != nil {
			t.Fatalf("killing the enforcer's container %s: %v", id, err)
		}
	}
	waitFor(t, "a new leader after the crash", 2*time.Minute, func() bool {
		h := leader(t)
		return h != "" && h != before && leaseTransitions(t) > transitions
	})
	led = time.Now()
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	return crashed, led
}

// leaseTransitions is the enforcer's Lease's leaseTransitions.
func leaseTransitions(t *testing.T) int {
	t.Helper()
	out, _ := kubectlErr("", "-n", namespace, "get", "lease", fullname, "-o", "jsonpath={.spec.leaseTransitions}")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// replay is what the agent's buffer holds of a pod: its flows, and its
// connections to port 8080 (their source ports).
type replay struct {
	flows, conns int
}

// replayOf reads the agent's buffer between since and until for the pod
// ns/name: the flows that name it at either end, and its connections to port
// 8080 (distinct source ports).
func replayOf(t *testing.T, ns, name string, since, until time.Time) replay {
	t.Helper()
	var r replay
	ports := map[uint32]bool{}
	agentFlows(t, since, until, func(m *observer.GetFlowsResponse) error {
		f := m.GetFlow()
		src, dst := f.GetSource(), f.GetDestination()
		if src.GetNamespace() == ns && src.GetPodName() == name || dst.GetNamespace() == ns && dst.GetPodName() == name {
			r.flows++
		}
		if tcp := f.GetL4().GetTCP(); src.GetNamespace() == ns && src.GetPodName() == name && tcp.GetDestinationPort() == 8080 {
			ports[tcp.GetSourcePort()] = true
		}
		return nil
	})
	r.conns = len(ports)
	return r
}

// checkNoCrossing fails t when any proposal of c has an edge to b, or b's
// ingress proposal a peer of c, in what it observed or in its spec: edges
// that c never made.
func checkNoCrossing(t *testing.T, when string) {
	t.Helper()
	crossed := 0
	names := strings.Fields(kubectl(t, "-n", reuseC, "get", "workloadnetworkpolicyproposals", "-o", "jsonpath={.items[*].metadata.name}"))
	for _, name := range names {
		p := proposalEdges(t, reuseC, name)
		for _, e := range p.edges {
			if strings.HasPrefix(e.Peer, reuseB+"/") {
				crossed++
				t.Errorf("%s: %s/%s observed %s, an edge of c to b that c never made", when, reuseC, name, e)
			}
		}
		if strings.Contains(p.spec, reuseB) {
			crossed++
			t.Errorf("%s: the spec of %s/%s names %s", when, reuseC, name, reuseB)
		}
	}
	const ingress = "deployment-server-ingress"
	p := proposalEdges(t, reuseB, ingress)
	for _, e := range p.edges {
		if strings.HasPrefix(e.Peer, reuseC+"/") {
			crossed++
			t.Errorf("%s: %s/%s observed %s, a peer of c that never called b", when, reuseB, ingress, e)
		}
	}
	if strings.Contains(p.spec, reuseC) {
		crossed++
		t.Errorf("%s: the spec of %s/%s names %s", when, reuseB, ingress, reuseC)
	}
	if crossed == 0 {
		t.Logf("%s: c's proposals %v have no edge to b, and b's ingress no peer of c", when, names)
	}
}

// edgeRef names an observed edge: its peer (namespace/Kind/name) and port.
type edgeRef struct {
	Peer string
	Port int32
}

func (r edgeRef) String() string { return fmt.Sprintf("%s TCP/%d", r.Peer, r.Port) }

// flowEdge is an observed edge with its counts.
type flowEdge struct {
	edgeRef
	Class    string
	Flows    int64
	LastSeen time.Time
}

func (e flowEdge) String() string {
	return fmt.Sprintf("%s %s (%d flows)", e.Class, e.edgeRef, e.Flows)
}

// proposalView is what the test reads of a proposal: its observed edges,
// its coverage gaps' causes and its spec.
type proposalView struct {
	edges []flowEdge
	gaps  string
	spec  string
}

func (p proposalView) find(r edgeRef) (flowEdge, bool) {
	for _, e := range p.edges {
		if e.edgeRef == r {
			return e, true
		}
	}
	return flowEdge{}, false
}

func proposalEdges(t *testing.T, ns, name string) proposalView {
	t.Helper()
	out, err := kubectlErr("", "-n", ns, "get", "workloadnetworkpolicyproposal", name, "-o", "json")
	if err != nil {
		return proposalView{}
	}
	var obj struct {
		Spec   json.RawMessage `json:"spec"`
		Status struct {
			Observed []struct {
				Peer struct {
					Class, Namespace, Kind, Name string
				} `json:"peer"`
				Port     int32     `json:"port"`
				Flows    int64     `json:"flows"`
				LastSeen time.Time `json:"lastSeen"`
			} `json:"observed"`
			CoverageGaps []struct {
				Cause string `json:"cause"`
			} `json:"coverageGaps"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	v := proposalView{spec: string(obj.Spec)}
	for _, o := range obj.Status.Observed {
		e := flowEdge{Class: o.Peer.Class, Flows: o.Flows, LastSeen: o.LastSeen, edgeRef: edgeRef{Port: o.Port}}
		if o.Peer.Class == "Workload" {
			e.Peer = o.Peer.Namespace + "/" + o.Peer.Kind + "/" + o.Peer.Name
		}
		v.edges = append(v.edges, e)
	}
	var causes []string
	for _, g := range obj.Status.CoverageGaps {
		causes = append(causes, g.Cause)
	}
	v.gaps = strings.Join(causes, ",")
	return v
}

// proposalFlows is the flows that the proposal counts for the edge.
func proposalFlows(t *testing.T, ns, name string, r edgeRef) int64 {
	t.Helper()
	e, _ := proposalEdges(t, ns, name).find(r)
	return e.Flows
}

// enforcerMetricWith sums the series of an enforcer pod's own metrics whose
// name starts with prefix and whose labels hold each of labels.
func enforcerMetricWith(p pod, prefix string, labels ...string) float64 {
	return metricSum("http://"+p.IP+":8888/metrics", prefix, labels...)
}
