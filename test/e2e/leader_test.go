package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"google.golang.org/grpc"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// leaseDuration and retryPeriod are the test's lease: a killed leader is replaced
// within the lease duration of its last renewal.
const (
	leaseDuration = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// replica is one collector process of the pair, with its metrics endpoint.
type replica struct {
	*process
	name, metrics string
}

// TestTwoReplicasOneWriter runs two processes of the built binary with leader
// election against a real API server and a Hubble Relay: only the leader streams
// and writes. The leader is then killed; the other takes over within one lease
// duration, and the proposals are neither duplicated nor lost (one, deleted
// before the kill, is written again by the new leader, and nothing else is).
func TestTwoReplicasOneWriter(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	flows, err := dataplanetest.LoadHubble(repoFile(t, dataplanetest.HubbleFixture))
	if err != nil {
		t.Fatal(err)
	}
	ca := certtest.NewCA(t, "cluster-ca")
	relay := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, dataplanetest.NewHubbleRelay(flows)) })

	start := func(name string) *replica { return startReplica(t, relay.Addr, ca.CertFile, name, "two-replicas") }
	a, b := start("a"), start("b")

	var leader, standby *replica
	waitFor(t, "one replica to write", time.Minute, func() bool {
		wa, wb := a.counter(t, "network_enforcer_writer_api_writes"), b.counter(t, "network_enforcer_writer_api_writes")
		switch {
		case wa > 0 && wb == 0:
			leader, standby = a, b
		case wb > 0 && wa == 0:
			leader, standby = b, a
		case wa > 0 && wb > 0:
			t.Fatalf("both replicas wrote: a %d, b %d", wa, wb)
		}
		return leader != nil
	})
	before := settledProposals(t, env)
	waitFor(t, "the standby to see the lease held", time.Minute, func() bool {
		return standby.counter(t, "network_enforcer_leader_changes_observed") > 0
	})
	if n := standby.counter(t, "network_enforcer_leader_terms"); n != 0 {
		t.Fatalf("the standby began %d terms", n)
	}
	if n := standby.counter(t, "network_enforcer_learning_edges"); n != 0 {
		t.Fatalf("the standby learned %d edges: it streamed", n)
	}
	if n := standby.counter(t, "network_enforcer_writer_api_writes"); n != 0 {
		t.Fatalf("the standby wrote %d times", n)
	}
	// The collector's standard receiver counts, beside the receiver's own: every
	// record that the leader's receiver emitted went into the pipeline, in
	// batches on the gRPC transport; the standby's received nothing.
	accepted := leader.counter(t, "network_enforcer_receiver_flows_accepted")
	if n := leader.counterWith(t, "otelcol_receiver_accepted_log_records", `receiver="hubble"`, `transport="grpc"`); accepted == 0 || n != accepted {
		t.Errorf("the leader's otelcol_receiver_accepted_log_records{receiver=\"hubble\"} %d, want its %d accepted flows", n, accepted)
	}
	if n := leader.counter(t, "otelcol_receiver_refused_log_records") + leader.counter(t, "otelcol_receiver_failed_log_records"); n != 0 {
		t.Errorf("the leader refused or failed %d log records", n)
	}
	if n := standby.counter(t, "otelcol_receiver_accepted_log_records"); n != 0 {
		t.Errorf("the standby's receiver accepted %d log records", n)
	}

	deleted := "shop/deployment-cart-ingress"
	if _, ok := before[deleted]; !ok {
		t.Fatalf("no %s among %v", deleted, before)
	}
	ns, name, _ := strings.Cut(deleted, "/")
	p := &v1alpha1.WorkloadNetworkPolicyProposal{}
	p.Namespace, p.Name = ns, name
	if err := env.Client.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}

	killed := time.Now()
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The dead leader's last renewal: the lease runs from there.
	lastRenew := lease(t).Spec.RenewTime.Time
	waitFor(t, "the standby to lead", 3*leaseDuration, func() bool { return terms(t, standby.metrics) > 0 })
	acquired := lease(t).Spec.AcquireTime.Time
	takeover := acquired.Sub(lastRenew)
	// A standby takes an unrenewed lease once lease_duration has passed since it
	// saw the last renewal. client-go polls with a jittered period of up to
	// (1+1.2)×retry_period, so the standby sees the last renewal up to one such
	// period late and tries again up to one such period after expiry. The
	// figure is logged beside that model, not held to it: a loaded machine's
	// round trips are not the product's.
	const jitteredRetry = retryPeriod * 22 / 10
	t.Logf("the standby took over %s after the last renewal (lease %s; the model's bound %s)",
		takeover.Round(time.Millisecond), leaseDuration, leaseDuration+2*jitteredRetry)
	waitFor(t, "the deleted proposal to come back", time.Minute, func() bool {
		return standby.specWrites(t) >= 1
	})
	after := settledProposals(t, env)
	if len(after) != len(before) {
		t.Fatalf("%d proposals after the takeover, %d before", len(after), len(before))
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("%s lost", k)
		} else if k != deleted && after[k] != v {
			t.Errorf("%s rewritten by the new leader", k)
		}
	}
	// The deleted proposal is created, and updated once more if its edges
	// straddle a write round; no other spec is written. Each status is
	// written at most once: the new leader's observed flows.
	if n := standby.specWrites(t); n < 1 || n > 2 {
		t.Errorf("the new leader wrote %d specs, want 1 or 2 (the deleted proposal)", n)
	}
	if n := standby.counter(t, "network_enforcer_writer_api_writes") - standby.specWrites(t); n > int64(len(after)) {
		t.Errorf("the new leader wrote %d statuses for %d proposals", n, len(after))
	}
	t.Logf("%d proposals; the standby took over %s after the last renewal, %s after the kill",
		len(after), takeover.Round(time.Millisecond), acquired.Sub(killed).Round(time.Millisecond))
}

// terms is how many terms of leadership the replica whose telemetry is at
// addr began (network_enforcer_leader_terms): what a test waits on to know
// that a replica leads, rather than a line of its log.
func terms(t *testing.T, addr string) int64 {
	t.Helper()
	return sumSamples(t, addr, leaderelectorextension.MetricTerms, func(string) bool { return true })
}

// counter sums the samples of a counter on the replica's Prometheus endpoint.
// specWrites is how many proposal specs the replica wrote (creates and
// updates; not their status).
func (r *replica) specWrites(t *testing.T) int64 {
	t.Helper()
	return r.counterExcept(t, "network_enforcer_writer_api_writes", `operation="status"`)
}

func (r *replica) counter(t *testing.T, name string) int64 {
	t.Helper()
	return r.counterExcept(t, name, "")
}

// counterExcept sums the series of a counter, leaving out those whose labels
// hold except (unless it is empty).
func (r *replica) counterExcept(t *testing.T, name, except string) int64 {
	t.Helper()
	return r.sum(t, name, func(line string) bool { return except == "" || !strings.Contains(line, except) })
}

// counterWith sums the series of a counter whose labels hold each of labels.
func (r *replica) counterWith(t *testing.T, name string, labels ...string) int64 {
	t.Helper()
	return counterWith(t, r.metrics, name, labels...)
}

func (r *replica) sum(t *testing.T, name string, keep func(line string) bool) int64 {
	t.Helper()
	return sumSamples(t, r.metrics, name, keep)
}

// counterWith sums the series of a counter on the Prometheus endpoint at addr
// whose labels hold each of labels.
func counterWith(t *testing.T, addr, name string, labels ...string) int64 {
	t.Helper()
	return sumSamples(t, addr, name, func(line string) bool {
		for _, l := range labels {
			if !strings.Contains(line, l) {
				return false
			}
		}
		return true
	})
}

// sumSamples sums the samples of a metric on the Prometheus endpoint at addr
// (a name that the exporter may suffix, as with _total) whose lines keep says
// to keep; 0 when the endpoint does not answer.
func sumSamples(t *testing.T, addr, name string, keep func(line string) bool) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") || !keep(line) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			n += int64(v)
		}
	}
	return n
}

// settledProposals waits until the proposals stop changing and returns their
// resourceVersions by namespace/name. Time must pass because a proposal's
// observed flows have no telemetry of what is still to be written (the
// writer's unwritten gauge counts edges, not flows), and after a kill the
// dead leader's counts are gone with it: settled is seen only as nothing
// changing for a while.
func settledProposals(t *testing.T, env *controlplanetest.Env) map[string]int64 {
	t.Helper()
	var last string
	var out map[string]int64
	stable := time.Now()
	deadline := time.Now().Add(time.Minute)
	for time.Since(stable) < 3*time.Second {
		if time.Now().After(deadline) {
			t.Fatal("the proposals never settled")
		}
		var list v1alpha1.WorkloadNetworkPolicyProposalList
		if err := env.Client.List(context.Background(), &list); err != nil {
			t.Fatal(err)
		}
		out = map[string]int64{}
		for _, p := range list.Items {
			out[p.Namespace+"/"+p.Name] = p.Generation
		}
		if s := fmt.Sprint(out); s != last {
			last, stable = s, time.Now()
		}
		// The poll's own interval, so that the loop does not spin while it
		// waits for the proposals to settle.
		time.Sleep(200 * time.Millisecond)
	}
	return out
}

// waitFor waits for cond (testwait.For).
var waitFor = testwait.For

// lease reads the replicas' Lease.
func lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "two-replicas"}, &l); err != nil {
		t.Fatal(err)
	}
	return &l
}

// startReplica starts the built binary as one replica of a two-replica
// deployment: leader election on the Lease leaseName, flows from the relay at
// relayAddr, proposals written.
func startReplica(t *testing.T, relayAddr, caFile, name, leaseName string, writerConfig ...string) *replica {
	t.Helper()
	metrics := freeAddr(t)
	host, port, _ := strings.Cut(metrics, ":")
	config := writeConfig(t, name+".yaml", fmt.Sprintf(`
extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[7]s
    lease_namespace: default
    lease_duration: %[1]s
    renew_deadline: 3s
    retry_period: %[6]s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
  hubble:
    relay:
      endpoint: %[2]s
      tls:
        ca_file: %[3]s
        server_name_override: ui.hubble-relay.cilium.io
    backfill:
      since: 876000h
    leader_elector: leader_elector
processors:
  learning:
exporters:
  k8swriter:%[8]s
service:
  extensions: [leader_elector, enforcer, policy_controller]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %[4]s
                port: %[5]s
  pipelines:
    logs:
      receivers: [hubble]
      processors: [learning]
      exporters: [k8swriter]
`, leaseDuration, relayAddr, caFile, host, port, retryPeriod, leaseName, strings.Join(writerConfig, "")))
	return &replica{process: startBinary(t, config, "KUBECONFIG="+kubeconfig), name: name, metrics: metrics}
}

// TestLeaderGivesUpTheLeaseOnSIGTERM: a leader that is told to stop, as a
// deleted pod is, releases the Lease on its way out, so that a standby takes
// over at its next retry instead of a lease later.
func TestLeaderGivesUpTheLeaseOnSIGTERM(t *testing.T) {
	controlplanetest.Require(t)
	ca := certtest.NewCA(t, "cluster-ca")
	relay := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, dataplanetest.NewHubbleRelay(nil)) })
	r := startReplica(t, relay.Addr, ca.CertFile, "sigterm", "sigterm")
	waitFor(t, "the replica to lead", time.Minute, func() bool { return terms(t, r.metrics) > 0 })
	stopped := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the replica did not exit within 30s of SIGTERM:\n%s", r.output)
	}
	var l coordinationv1.Lease
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "sigterm"}, &l); err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Fatalf("the stopped leader still holds the Lease (%s):\n%s", *h, r.output)
	}
	t.Logf("the leader exited and released the Lease %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
}
