//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// violationCount is the server's policy's status.violationCount.
func violationCount(t *testing.T) int {
	t.Helper()
	out := kubectl(t, "-n", "shop", "get", "workloadnetworkpolicy", serverPolicy, "-o", "jsonpath={.status.violationCount}")
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// deny makes client-b try the server again, which Cilium drops under protect
// and reports.
func deny(t *testing.T, w workloads) {
	t.Helper()
	if d := connect(t, w.clientB, serverAddr); !d.blocked() {
		t.Fatalf("client-b under protect: %+v", d)
	}
}

// waitCount waits until the policy's violationCount is want, then checks that
// it stays there for two status syncs: nothing lost, nothing counted twice.
func waitCount(t *testing.T, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("violationCount %d", want), 2*time.Minute, func() bool { return violationCount(t) >= want })
	// Time must pass because a status sync that has nothing more to write
	// leaves no trace: the count must stay for two syncs, either of which would
	// write a second count.
	time.Sleep(2 * syncInterval)
	if got := violationCount(t); got != want {
		t.Fatalf("violationCount %d, want %d", got, want)
	}
}

// chartPolicies: Cilium enforces the chart's own NetworkPolicies: a pod of
// another namespace may scrape the metrics ports but not reach the
// collector's OTLP port, which only the enforcer may (the events reached it).
func chartPolicies(t *testing.T, w workloads) {
	collector := listPods(t, namespace, collectorPods)[0]
	enforcer := listPods(t, namespace, enforcerPods)[0]
	if d := connect(t, w.clientA, net.JoinHostPort(collector.IP, "4317")); !d.blocked() {
		t.Errorf("client-a to the collector's OTLP port: %+v, want it blocked", d)
	}
	if d := connect(t, w.clientA, net.JoinHostPort(collector.IP, "9464")); d.Error != "" {
		t.Errorf("client-a to the collector's metrics port: %+v, want a connection", d)
	}
	if d := connect(t, w.clientA, net.JoinHostPort(enforcer.IP, "8888")); d.Error != "" {
		t.Errorf("client-a to the enforcer's metrics port: %+v, want a connection", d)
	}
	if d := connect(t, w.clientA, net.JoinHostPort(enforcer.IP, "4317")); d.Error == "" {
		t.Errorf("client-a to the enforcer's unlisted port 4317 connected: %+v", d)
	}
}

// restartRelay deletes the hubble-relay pod and waits until its replacement
// is Ready; it returns how long that took.
func restartRelay(t *testing.T) time.Duration {
	t.Helper()
	old := listPods(t, "kube-system", "k8s-app=hubble-relay")[0]
	start := time.Now()
	kubectl(t, "-n", "kube-system", "delete", "pod", old.Name, "--wait=false")
	waitFor(t, "a new relay pod Ready", 2*time.Minute, func() bool {
		for _, p := range listPods(t, "kube-system", "k8s-app=hubble-relay") {
			if p.Name != old.Name && p.ready() {
				return true
			}
		}
		return false
	})
	return time.Since(start)
}

// takeover: the leader pod is deleted; another enforcer pod (the standby, or
// the Deployment's replacement, whichever retries first) takes the Lease within
// one lease of the old leader's last renewal, and the journey goes on under it.
func takeover(t *testing.T, w workloads) {
	pods := waitReady(t, namespace, enforcerPods, 2, 2*time.Minute)
	holder := waitLeader(t, pods)
	var leaderPod string
	for _, p := range pods {
		if strings.HasPrefix(holder, p.Name) {
			leaderPod = p.Name
		}
	}
	before := violationCount(t)
	start := time.Now()
	kubectl(t, "-n", namespace, "delete", "pod", leaderPod, "--wait=false")
	var lastRenew time.Time
	var newHolder string
	waitFor(t, "another pod to take the Lease", 2*leaseDuration, func() bool {
		l := lease(t)
		if strings.HasPrefix(l.holder, leaderPod) {
			lastRenew = l.renewed
			return false
		}
		newHolder = l.holder
		return l.holder != ""
	})
	took := time.Since(start)
	sinceRenewal := "its last renewal not seen"
	if !lastRenew.IsZero() {
		sinceRenewal = time.Since(lastRenew).Round(100*time.Millisecond).String() + " after its last renewal"
	}
	t.Logf("takeover: %s led %s after %s was deleted (%s)", newHolder, took.Round(100*time.Millisecond), leaderPod, sinceRenewal)
	// The deleted leader gives the Lease up on its way out (SIGTERM), so the
	// others take it at their next retry; were it killed, they would once it
	// expires, one lease after the last renewal, trying every retry period
	// with client-go's jitter (up to 2.2 retry periods apart): the bound.
	if bound := leaseDuration + retryPeriod*22/10 + time.Second; !lastRenew.IsZero() && time.Since(lastRenew) > bound {
		t.Errorf("takeover %s after the old leader's last renewal: more than one lease and a retry (%s)", time.Since(lastRenew), bound)
	}
	// The deleted leader wrote what it held on its way out and handed the
	// stream over with the Lease: the new leader resumes after it, so the
	// violations that the old leader counted are not counted again.
	deny(t, w)
	waitCount(t, before+1)
	t.Logf("violationCount %d before the takeover, %d after it and one new violation", before, violationCount(t))
}

// leaseState is what the tests read of the enforcer's Lease.
type leaseState struct {
	holder  string
	renewed time.Time
}

func lease(t *testing.T) leaseState {
	t.Helper()
	out, err := kubectlErr("", "-n", namespace, "get", "lease", fullname, "-o", "jsonpath={.spec.holderIdentity}|{.spec.renewTime}")
	if err != nil {
		return leaseState{}
	}
	// A released Lease has no holder: the separator keeps the fields apart.
	holder, renew, _ := strings.Cut(strings.TrimSpace(out), "|")
	ts, _ := time.Parse(time.RFC3339Nano, renew)
	return leaseState{holder: holder, renewed: ts}
}

// eviction: a drain's evictions respect the chart's PodDisruptionBudget: of
// the two enforcer replicas, one may go, the second is refused until the
// first's replacement is Ready.
func eviction(t *testing.T) {
	pods := waitReady(t, namespace, enforcerPods, 2, 2*time.Minute)
	evict := func(name string) error {
		body, _ := json.Marshal(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction",
			"metadata": map[string]string{"name": name, "namespace": namespace}})
		_, err := kubectlErr(string(body), "create", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+name+"/eviction", "-f", "-")
		return err
	}
	if err := evict(pods[0].Name); err != nil {
		t.Fatalf("evicting the first replica: %v", err)
	}
	err := evict(pods[1].Name)
	if err == nil || !strings.Contains(err.Error(), "disruption budget") {
		t.Fatalf("evicting the second replica at once: %v, want a refusal by the disruption budget", err)
	}
	t.Logf("second eviction refused: %v", err)
	waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	waitLeader(t, listPods(t, namespace, enforcerPods))
}

// memory logs the working set of the chart's pods and the relay: as the
// kubelet reports it, and as the pod's memory cgroup on the node holds it
// (usage less inactive file cache, the kubelet's own definition).
func memory(t *testing.T) {
	t.Helper()
	// The whole summary needs the root filesystem's stats, which cadvisor
	// cannot read on this kind of disk: ask for CPU and memory only.
	out := kubectl(t, "get", "--raw", "/api/v1/nodes/ne-node/proxy/stats/summary?only_cpu_and_memory=true")
	var summary struct {
		Pods []struct {
			PodRef struct{ Name, Namespace, UID string } `json:"podRef"`
			Memory struct {
				WorkingSetBytes uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatal(err)
	}
	for _, p := range summary.Pods {
		if p.PodRef.Namespace == namespace || strings.HasPrefix(p.PodRef.Name, "hubble-relay") {
			t.Logf("memory: %s/%s working set %.1f MiB (kubelet), %s (cgroup)", p.PodRef.Namespace, p.PodRef.Name,
				float64(p.Memory.WorkingSetBytes)/(1<<20), cgroupWorkingSet(p.PodRef.UID))
		}
	}
}

// cgroupWorkingSet reads a pod's memory cgroup (cgroup v1, the kubelet's
// cgroupfs layout).
func cgroupWorkingSet(uid string) string {
	for _, qos := range []string{"burstable/", "besteffort/", ""} {
		dir := "/sys/fs/cgroup/memory/kubepods/" + qos + "pod" + uid + "/"
		usage, err := os.ReadFile(dir + "memory.usage_in_bytes")
		if err != nil {
			continue
		}
		u, _ := strconv.ParseUint(strings.TrimSpace(string(usage)), 10, 64)
		stat, _ := os.ReadFile(dir + "memory.stat")
		for _, line := range strings.Split(string(stat), "\n") {
			if v, ok := strings.CutPrefix(line, "total_inactive_file "); ok {
				if inactive, err := strconv.ParseUint(v, 10, 64); err == nil && inactive < u {
					u -= inactive
				}
			}
		}
		return fmt.Sprintf("%.1f MiB", float64(u)/(1<<20))
	}
	return "not found"
}
