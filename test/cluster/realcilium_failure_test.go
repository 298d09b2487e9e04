//go:build cluster

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// agentSocket is the Cilium agent's local Hubble server, without TLS, which
// the hubble CLI on a node reads.
const agentSocket = "unix:///run/cilium/hubble.sock"

// agentObserver dials the agent's local Hubble server.
func agentObserver(t *testing.T) observer.ObserverClient {
	t.Helper()
	conn, err := grpc.NewClient(agentSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return observer.NewObserverClient(conn)
}

// agentSeenFlows is how many flows the Cilium agent's Hubble observer has
// seen since the agent started.
func agentSeenFlows(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := agentObserver(t).ServerStatus(ctx, &observer.ServerStatusRequest{})
	if err != nil {
		t.Fatalf("the agent's Hubble ServerStatus: %v", err)
	}
	return st.GetSeenFlows()
}

// agentFlows passes each flow that the agent's buffer holds between since and
// until to each, in order, and returns how many it passed.
func agentFlows(t *testing.T, since, until time.Time, each func(*observer.GetFlowsResponse) error) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := agentObserver(t).GetFlows(ctx, &observer.GetFlowsRequest{Since: timestamppb.New(since), Until: timestamppb.New(until)})
	if err != nil {
		t.Fatalf("the agent's Hubble GetFlows: %v", err)
	}
	n := 0
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("the agent's Hubble GetFlows: %v", err)
		}
		if m.GetFlow() == nil {
			continue
		}
		if err := each(m); err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// leaderPod is the enforcer pod that holds the Lease.
func leaderPod(t *testing.T) pod {
	t.Helper()
	pods := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	holder := waitLeader(t, pods)
	for _, p := range pods {
		if strings.HasPrefix(holder, p.Name) {
			return p
		}
	}
	t.Fatalf("no pod of %s holds the Lease (%s)", enforcerPods, holder)
	return pod{}
}

// enforcerMetric sums the series of an enforcer pod's own metrics whose
// name starts with prefix.
func enforcerMetric(p pod, prefix string) float64 {
	return metricSum("http://"+p.IP+":8888/metrics", prefix)
}

// received is how many flows the enforcer pod's Hubble receiver took off the
// stream: turned into records or dropped, for whatever reason.
func received(p pod) float64 { return enforcerMetric(p, "network_enforcer_receiver_flows_") }

// podCPU is the CPU time that a pod's containers used so far (cgroup v1, the
// kubelet's cgroupfs layout).
func podCPU(t *testing.T, ns, name string) time.Duration {
	t.Helper()
	uid := strings.TrimSpace(kubectl(t, "-n", ns, "get", "pod", name, "-o", "jsonpath={.metadata.uid}"))
	for _, qos := range []string{"burstable/", "besteffort/", ""} {
		for _, hierarchy := range []string{"cpuacct", "cpu,cpuacct"} {
			out, err := os.ReadFile("/sys/fs/cgroup/" + hierarchy + "/kubepods/" + qos + "pod" + uid + "/cpuacct.usage")
			if err != nil {
				continue
			}
			ns, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
			return time.Duration(ns)
		}
	}
	t.Fatalf("no CPU cgroup for pod %s/%s", ns, name)
	return 0
}

// flowMeter measures, over a stretch of the journey, the flows the agent
// produced, what the leading enforcer received of them and the CPU that the
// enforcer spent.
type flowMeter struct {
	leader     pod
	start      time.Time
	seen, recv float64
	cpu        time.Duration
	// idleCPU and idleFlows are the enforcer's CPU and flows per second
	// before the journey: its fixed cost (lease, cache, writes) and the
	// node's own traffic (probes, the relay).
	idleCPU, idleFlows float64
}

// idleWindow is how long the meter watches the enforcer before the journey.
const idleWindow = 20 * time.Second

func startFlowMeter(t *testing.T) *flowMeter {
	m := &flowMeter{leader: leaderPod(t)}
	recv0, cpu0 := received(m.leader), podCPU(t, namespace, m.leader.Name)
	// Time must pass: the meter measures the enforcer's idle cost over
	// idleWindow.
	time.Sleep(idleWindow)
	m.start = time.Now()
	m.recv = received(m.leader)
	m.seen = float64(agentSeenFlows(t))
	m.cpu = podCPU(t, namespace, m.leader.Name)
	m.idleCPU = (m.cpu - cpu0).Seconds() / idleWindow.Seconds()
	m.idleFlows = (m.recv - recv0) / idleWindow.Seconds()
	return m
}

// stop reads the figures: the agent's count first, then the enforcer's once
// it has stopped growing, so that every flow the agent counted has had its
// time to arrive (the enforcer's count also holds the few flows after the
// agent's read).
func (m *flowMeter) stop(t *testing.T) {
	secs := time.Since(m.start).Seconds()
	seen := float64(agentSeenFlows(t)) - m.seen
	var recv float64
	waitFor(t, "the enforcer to receive what the agent produced", time.Minute, func() bool {
		recv = received(m.leader) - m.recv
		return recv >= seen
	})
	cpu := podCPU(t, namespace, m.leader.Name) - m.cpu
	lost := enforcerMetric(m.leader, "network_enforcer_receiver_lost_events")
	// At a real node's few flows a second the enforcer's fixed cost (the
	// lease, the cache, the writes) is most of its CPU: the idle rate says
	// how much. CPU per flow at volume is what `make loadtest` measures.
	t.Logf("journey flows: the agent produced %.0f in %.0fs (%.1f flows/s); the leading enforcer received %.0f (lost events reported: %.0f); "+
		"enforcer CPU %s, %.1f%% of a core, %.0f µs per flow (before the journey: %.1f%% of a core with %.1f flows/s)",
		seen, secs, seen/secs, recv, lost, cpu.Round(time.Millisecond), 100*cpu.Seconds()/secs,
		float64(cpu.Microseconds())/recv, 100*m.idleCPU, m.idleFlows)
	if lost != 0 {
		t.Errorf("the relay reported %.0f lost events", lost)
	}
}

// restartAgent restarts the Cilium agent's process (realnodetest's RestartAgent)
// and waits until it is ready again.
func restartAgent(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if err := running.restartAgent(); err != nil {
		t.Fatal("restarting the Cilium agent:", err)
	}
	return time.Since(start)
}

// violations is the policy's status.violationCount in namespace store.
func violations(t *testing.T, policy string) int {
	t.Helper()
	out := kubectl(t, "-n", "store", "get", "workloadnetworkpolicy", policy, "-o", "jsonpath={.status.violationCount}")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// refuseOnce makes api try web's port 8080, which api's egress policy in
// protect refuses, and checks that api's policy counts it once: it reaches
// want and stays there for two status syncs.
func refuseOnce(t *testing.T, api, web pod, want int) {
	t.Helper()
	if d := connect(t, api, web.IP+":8080"); d.Error == "" {
		t.Fatalf("api to web:8080 went through under protect: %+v", d)
	}
	waitFor(t, fmt.Sprintf("violationCount %d in deployment-api-egress", want), 2*time.Minute, func() bool {
		return violations(t, "deployment-api-egress") >= want
	})
	// Time must pass because a status sync that has nothing more to write
	// leaves no trace: the count must stay for two syncs, either of which would
	// write a second count.
	time.Sleep(2 * syncInterval)
	if got := violations(t, "deployment-api-egress"); got != want {
		t.Fatalf("violationCount of deployment-api-egress %d, want %d: one per refused attempt", got, want)
	}
}

// realFailures: the relay restarted and the agent restarted while the
// enforcer streams; each refused attempt after them is counted once.
func realFailures(t *testing.T, api, web pod) {
	n := violations(t, "deployment-api-egress")

	t.Logf("relay restart: a new relay pod Ready %s after the old one was deleted", restartRelay(t).Round(100*time.Millisecond))
	n++
	refuseOnce(t, api, web, n)

	leader := leaderPod(t)
	nodeErrors := enforcerMetric(leader, "network_enforcer_receiver_node_errors")
	took := restartAgent(t)
	t.Logf("agent restart: the Cilium agent was ready again %s after its stop began", took.Round(100*time.Millisecond))
	n++
	refuseOnce(t, api, web, n)
	waitFor(t, "the enforcer to count the relay's node error", time.Minute, func() bool {
		return enforcerMetric(leader, "network_enforcer_receiver_node_errors") > nodeErrors
	})
	t.Logf("agent restart: the relay reported the node unreadable %.0f times", enforcerMetric(leader, "network_enforcer_receiver_node_errors")-nodeErrors)
}

// takeoverDuringLearning: a Job's pod calls api once a second while the
// leader pod is deleted. Every connection counts once in what is learned
// (the Job's egress proposal) and in what is judged (api's ingress policy, in
// monitor): none lost at the takeover, none counted twice.
func takeoverDuringLearning(t *testing.T) {
	// 24 connections a second apart: the first ones learned (about 5s),
	// the takeover (about 3s) and as many again after it.
	const dials = 24
	apply(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: store}
spec:
  backoffLimit: 0
  template:
    metadata: {labels: {app: batch}}
    spec:
      restartPolicy: Never
      containers:
        - name: batch
          image: %s
          imagePullPolicy: Never
          args: [dial, "api.store.svc.cluster.local:8080", "1s", "%d"]
`, testpodImage, dials))
	waitFor(t, "the Job's first connections in its proposal", 2*time.Minute, func() bool {
		return edgeFlows(t, "workloadnetworkpolicyproposal", "job-batch-egress", "api", 8080) > 0
	})
	old := leaderPod(t)
	kubectl(t, "-n", namespace, "delete", "pod", old.Name, "--wait=false")
	waitFor(t, "another pod to lead", time.Minute, func() bool {
		h := leader(t)
		return h != "" && !strings.HasPrefix(h, old.Name)
	})
	waitFor(t, "the Job to complete", 2*time.Minute, func() bool {
		out, _ := kubectlErr("", "-n", "store", "get", "job", "batch", "-o", "jsonpath={.status.succeeded}")
		return strings.TrimSpace(out) == "1"
	})
	logs := kubectl(t, "-n", "store", "logs", "job/batch")
	made := strings.Count(logs, `-> `)
	if made == 0 {
		t.Fatalf("the Job made no connection:\n%s", logs)
	}
	for _, c := range []struct{ resource, name, peer string }{
		{"workloadnetworkpolicyproposal", "job-batch-egress", "api"},
		{"workloadnetworkpolicy", "deployment-api-ingress", "batch"},
	} {
		var got int64
		waitFor(t, fmt.Sprintf("%d flows of batch -> api:8080 in %s", made, c.name), 3*time.Minute, func() bool {
			got = edgeFlows(t, c.resource, c.name, c.peer, 8080)
			return got >= int64(made)
		})
		// Time must pass because a write round that has nothing more to write
		// leaves no trace: the count must stay for two of them, either of which
		// would write a second count.
		time.Sleep(2 * syncInterval)
		if got = edgeFlows(t, c.resource, c.name, c.peer, 8080); got != int64(made) {
			t.Errorf("%s: %d flows of batch -> api:8080 across the takeover, want %d: one per connection", c.name, got, made)
		}
	}
	t.Logf("takeover during learning: %d connections, each counted once in the proposal and in the policy", made)
}

// edgeFlows is the flows that a proposal's or policy's status.observed counts
// for the workload peer named on port.
func edgeFlows(t *testing.T, resource, name, peer string, port int32) int64 {
	t.Helper()
	out, err := kubectlErr("", "-n", "store", "get", resource, name, "-o", "json")
	if err != nil {
		return 0
	}
	var obj struct {
		Status struct {
			Observed []struct {
				Peer  struct{ Name string } `json:"peer"`
				Port  int32                 `json:"port"`
				Flows int64                 `json:"flows"`
			} `json:"observed"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, o := range obj.Status.Observed {
		if o.Peer.Name == peer && o.Port == port {
			n += o.Flows
		}
	}
	return n
}
