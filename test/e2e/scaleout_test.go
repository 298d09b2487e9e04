package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// The scale-out tests run the built binary as 1, 2 and 3 replicas that read a
// fake Cilium cluster's nodes directly (each node a Hubble server behind the
// Peer service, over mutual TLS), learn, and send the leader what they
// learned over mutual TLS; and, for reference, as one replica that reads the
// same flows through Hubble Relay.

const (
	// scaleOutNamespace holds the replicas' Leases and the Pods that name
	// their addresses, as the chart's release namespace does.
	scaleOutNamespace = "network-enforcer"
	// scaleOutLeaderName is the name that the replicas' certificate carries
	// and that a reader checks in the leader's.
	scaleOutLeaderName = "leader.network-enforcer.network-enforcer"
	// scaleOutNodes is the fake cluster's size.
	scaleOutNodes = 8
)

// scaleOutPolicy governs the api's ingress in monitor mode, allowing the
// client on 8080: the intruder's connections to the api are violations, the
// client's are not, and the client's egress is learned.
var scaleOutPolicy = types.NamespacedName{Namespace: "guarded", Name: "deployment-api-ingress"}

// scaleOutRun is what one configuration learned and reported.
type scaleOutRun struct {
	// egress is the client's egress proposal's spec, as text.
	egress string
	// violations counts the violation events by destination port.
	violations map[string]int
	// flows counts, by destination port, the flows of the client's egress
	// edges that its proposal's status lists as observed.
	flows map[int32]int64
}

// TestScaleOutLearnsAsTheRelay: 1, 2 and 3 replicas that share the nodes
// learn the same proposal and report the same violations, each once, as one
// replica that reads Hubble Relay, from the same flows.
func TestScaleOutLearnsAsTheRelay(t *testing.T) {
	controlplanetest.Require(t)
	ca := certtest.NewCA(t, "scale-out-ca")
	want := scaleOutFlows()

	var reference scaleOutRun
	t.Run("relay", func(t *testing.T) {
		reference = scaleOutRelay(t, ca, want)
	})
	if t.Failed() {
		return
	}
	var oneReader int64
	for replicas := 1; replicas <= 3; replicas++ {
		t.Run(fmt.Sprintf("%d replicas", replicas), func(t *testing.T) {
			s := newScaleOut(t, ca, replicas, "1s")
			s.push(want)
			got := s.settle(t, want)
			if got.egress != reference.egress {
				t.Errorf("the client's egress proposal:\n%s\nthrough the relay:\n%s", got.egress, reference.egress)
			}
			if fmt.Sprint(got.violations) != fmt.Sprint(reference.violations) {
				t.Errorf("violations by port %v, through the relay %v", got.violations, reference.violations)
			}
			if fmt.Sprint(got.flows) != fmt.Sprint(reference.flows) {
				t.Errorf("observed flows by port %v, through the relay %v", got.flows, reference.flows)
			}
			// Each node's flows are read once: a node that moves as the
			// replicas join is read by its new owner from where the previous
			// one released it.
			read := s.logFigures(t, want)
			if replicas == 1 {
				oneReader = read
			} else if read != oneReader {
				t.Errorf("%d replicas read %d flows, one replica %d", replicas, read, oneReader)
			}
		})
	}
}

// TestScaleOutReplicaKilled: three replicas; one that reads nodes but does
// not lead is killed with SIGKILL while the nodes keep sending, after its
// Lease published checkpoints past flows that it had not sent the leader yet
// (its records wait out a 3-second aggregation). Its nodes move to the others
// within one lease duration and a retry of its last renewal, which count from
// how far the leader took its records; every connection is learned, each
// flow counted once, and every violation reported once.
func TestScaleOutReplicaKilled(t *testing.T) {
	s, first, perConnection := startKillRun(t)

	leader := s.leader(t)
	var victim *scaleOutReplica
	for _, r := range s.replicas {
		if r != leader && r.counter(t, "network_enforcer_receiver_nodes") > 0 {
			victim = r
			break
		}
	}
	if victim == nil {
		t.Fatal("no replica but the leader reads a node")
	}
	before := s.requests()

	// The victim dies once its Lease says it handed on flows of the second
	// set, which its aggregation holds for up to three seconds.
	second := scaleOutFlows().shifted(1000)
	pushed := time.Now()
	s.push(second)
	var published map[string]time.Time
	waitFor(t, "the victim to publish checkpoints past the second set", 30*time.Second, func() bool {
		published = memberLease(t, victim.name).reading()
		for _, cp := range published {
			if cp.After(pushed) {
				return true
			}
		}
		return false
	})
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	// How far the leader took each node's records, as its shards publish
	// them once the victim's renewal is overdue (two retry periods) and the
	// leader renewed after that: the victim's nodes stay there until their
	// new readers send, a lease after its last renewal.
	var counted map[string]time.Time
	waitFor(t, "the leader to renew once the victim is overdue", 10*time.Second, func() bool {
		l := memberLease(t, leader.name)
		counted = l.counted
		return l.renewed.After(killed.Add(4 * retryPeriod))
	})
	third := scaleOutFlows().shifted(2000)
	s.push(third)

	// The victim's nodes are asked for again, by the others, from where the
	// leader took them: within a lease duration and a jittered retry of its
	// last renewal.
	var moved []string
	waitFor(t, "the victim's nodes to be read again", 3*leaseDuration, func() bool {
		moved = moved[:0]
		after := s.requests()
		for node, n := range after {
			if n > before[node] {
				moved = append(moved, node)
			}
		}
		return len(moved) > 0 && s.allNodesRead(t)
	})
	// How long it took is a figure, not a verdict: a loaded machine may take
	// longer than the lease promises, and the waitFor above bounds it.
	took := time.Since(killed)
	// Each two connection periods (2 × 150 s) before where the leader took
	// it: the flows up to there only tell the connections apart.
	for _, node := range moved {
		from, ok := counted[node]
		since := s.cluster.Node(node).LastRequest().GetSince().AsTime()
		if !ok || !since.Equal(from.Add(-300*time.Second)) {
			t.Errorf("node %s: the new reader asked since %v; the leader took it up to %v (published: %v), the victim's checkpoint %v",
				node, since, from, ok, published[node])
		}
	}
	const jitteredRetry = retryPeriod * 22 / 10
	t.Logf("nodes %v moved %s after the kill (a lease duration and two jittered retries: %s)",
		moved, took.Round(time.Millisecond), leaseDuration+2*jitteredRetry)

	checkCountedOnce(t, s, perConnection, first, second, third)
}

// startKillRun starts three replicas with a 3-second aggregation, pushes the
// first set and returns it with the flows of one connection as the client's
// egress counts them, with no replica killed.
func startKillRun(t *testing.T) (s *scaleOut, first scaleOutFlowSet, perConnection int64) {
	t.Helper()
	controlplanetest.Require(t)
	s = newScaleOut(t, certtest.NewCA(t, "scale-out-ca"), 3, "3s")
	s.policyBefore = policyCountsNow(t)
	first = scaleOutFlows()
	s.push(first)
	perConnection = s.settle(t, first).flows[int32(first[0].port)]
	if perConnection == 0 {
		t.Fatal("the client's first connection has no observed flows")
	}
	// The policy's status counts the first set's violations and observed
	// flows, which it writes a status sync after the events.
	waitFor(t, "the policy's status to count the first set", time.Minute, func() bool {
		s.policyPerSet = policyCountsNow(t).minus(s.policyBefore)
		return s.policyPerSet.violations >= int64(len(first)) && s.policyPerSet.flows >= int64(len(first))
	})
	return s, first, perConnection
}

// policyCounts is what the api policy's status counts: its violations
// (status.violationCount) and the flows of its observed edges.
type policyCounts struct{ violations, flows int64 }

func (a policyCounts) minus(b policyCounts) policyCounts {
	return policyCounts{a.violations - b.violations, a.flows - b.flows}
}

// policyCountsNow reads the api policy's counts.
func policyCountsNow(t *testing.T) policyCounts {
	t.Helper()
	var policy v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(context.Background(), scaleOutPolicy, &policy); err != nil {
		t.Fatal(err)
	}
	c := policyCounts{violations: policy.Status.ViolationCount}
	for _, e := range policy.Status.Observed {
		c.flows += e.Flows
	}
	if policy.Status.OmittedEdges > 0 {
		t.Fatalf("the policy's status omits %d observed edges: its counts cannot be compared", policy.Status.OmittedEdges)
	}
	return c
}

// checkCountedOnce settles the sets pushed and checks what a kill must not
// change: every violation reported once (every connection is one: the api's
// policy allows only the client on 8080), and every client connection counted
// perConnection flows in its egress.
func checkCountedOnce(t *testing.T, s *scaleOut, perConnection int64, sets ...scaleOutFlowSet) {
	t.Helper()
	var all scaleOutFlowSet
	for _, set := range sets {
		all = append(all, set...)
	}
	got := s.settle(t, all)
	reported := 0
	for port, n := range got.violations {
		reported += n
		if n != 1 {
			t.Errorf("the violation on port %s was reported %d times", port, n)
		}
	}
	t.Logf("%d violations for %d violating connections", reported, len(all))
	var wrong []string
	var total, want int64
	for _, c := range all {
		if c.src != caller {
			continue
		}
		n := got.flows[int32(c.port)]
		total, want = total+n, want+perConnection
		if n != perConnection {
			wrong = append(wrong, fmt.Sprintf("%d: %d", c.port, n))
		}
	}
	t.Logf("the client's egress counts %d flows of %d pushed", total, want)
	if len(wrong) > 0 {
		t.Errorf("connections counted other than %d flows each, by port: %v", perConnection, wrong)
	}
	// The policy's status counts every set's violations and governed flows
	// once, as the first set's: a kill loses none and counts none twice.
	n := int64(len(sets))
	wantPolicy := policyCounts{s.policyBefore.violations + n*s.policyPerSet.violations, s.policyBefore.flows + n*s.policyPerSet.flows}
	var gotPolicy policyCounts
	waitFor(t, fmt.Sprintf("the policy's status to count %+v", wantPolicy), time.Minute, func() bool {
		gotPolicy = policyCountsNow(t)
		return gotPolicy.violations >= wantPolicy.violations && gotPolicy.flows >= wantPolicy.flows
	})
	// A batch counted twice would come with a later status sync: two must
	// pass so that the comparison below sees it.
	time.Sleep(2 * scaleOutStatusSync)
	if gotPolicy = policyCountsNow(t); gotPolicy != wantPolicy {
		t.Errorf("the policy's status counts %d violations and %d observed flows, want %d and %d (before %+v, per set %+v)",
			gotPolicy.violations, gotPolicy.flows, wantPolicy.violations, wantPolicy.flows, s.policyBefore, s.policyPerSet)
	}
	t.Logf("the policy's status counts %d violations and %d observed flows, %+v per set", gotPolicy.violations, gotPolicy.flows, s.policyPerSet)
}

// scaleOutFlowSet is the connections that a run's nodes report.
type scaleOutFlowSet []scaleOutConnection

type scaleOutConnection struct {
	src, dst dataplanetest.End
	port     uint32
	kind     dataplanetest.Connection
}

// scaleOutFlows is 24 connections of the client to the api and 12 of the
// intruder to the api, each on a port of its own. The api's policy allows
// only the client on 8080, so each is a violation of it, reported once; the
// client's are learned as its egress, which no policy governs.
func scaleOutFlows() scaleOutFlowSet {
	var set scaleOutFlowSet
	for i := range uint32(24) {
		set = append(set, scaleOutConnection{src: caller, dst: api, port: 30000 + i, kind: dataplanetest.ConnectionUnenforced})
	}
	for i := range uint32(12) {
		set = append(set, scaleOutConnection{src: intruder, dst: api, port: 30500 + i, kind: dataplanetest.ConnectionDryRunDenied})
	}
	return set
}

// shifted is the set on other ports.
func (set scaleOutFlowSet) shifted(by uint32) scaleOutFlowSet {
	out := slices.Clone(set)
	for i := range out {
		out[i].port += by
	}
	return out
}

// responses is what the agents emit for the set: each connection on the node
// of its index, stamped now.
func (set scaleOutFlowSet) responses(clientPort *uint32) []*observer.GetFlowsResponse {
	var out []*observer.GetFlowsResponse
	for i, c := range set {
		*clientPort++
		node := scaleOutNode(i % scaleOutNodes)
		for _, r := range dataplanetest.NewHubbleConnection(c.src, c.dst, *clientPort, c.port, c.kind) {
			r.NodeName = node
			if f := r.GetFlow(); f != nil {
				f.NodeName = node
			}
			out = append(out, r)
		}
	}
	return out
}

func scaleOutNode(i int) string { return fmt.Sprintf("worker-%d", i+1) }

// scaleOutRelay runs one replica on the relay with the set's flows.
func scaleOutRelay(t *testing.T, ca *certtest.CA, set scaleOutFlowSet) scaleOutRun {
	resetScaleOut(t)
	sink := startOTLPSink(t)
	relay := dataplanetest.NewHubbleRelay(nil)
	var clientPort uint32 = 40000
	relay.Push(set.responses(&clientPort)...)
	startRelayReplica(t, "relay", ca, relay, sink.Addr)
	return settleScaleOut(t, sink, set)
}

// scaleOutStatusSync is the replicas' status_sync_interval.
const scaleOutStatusSync = 2 * time.Second

// scaleOutConfig is a replica's configuration: %[1]s the lease, %[2]s its
// receivers, %[3]s its exporters (beside the writer and the sink), %[4]s its
// further pipelines, %[5]s the sink, %[6]s:%[7]s its metrics, %[8]s, %[9]s,
// %[10]s the flow pipeline's receivers, processors and exporters, %[11]s the
// leader receiver's pipeline.
const scaleOutConfig = `
extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[1]s
    lease_namespace: ` + scaleOutNamespace + `
    lease_duration: 4s
    renew_deadline: 3s
    retry_period: 500ms
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:%[2]s
processors:
  learning:
  violation:
    status_sync_interval: 2s # scaleOutStatusSync
    # Every observed edge of the policy listed, and written within a
    # second: the kill runs compare its counts.
    observed_interval: 1s
    max_observed: 256
connectors:
  forward/violations:
exporters:%[3]s
  k8swriter:
    # Every observed edge listed, and written within a second: the runs
    # compare their flow counts.
    observed_interval: 1s
    max_observed: 256
  otlp_grpc:
    endpoint: %[5]s
    tls:
      insecure: true
service:
  extensions: [leader_elector, enforcer, policy_controller]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %[6]s
                port: %[7]s
  pipelines:
    logs/flows:
      receivers: %[8]s
      processors: %[9]s
      exporters: %[10]s%[11]s
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [otlp_grpc]
`

// scaleOut is a fake Cilium cluster and the replicas that read it.
type scaleOut struct {
	cluster    *dataplanetest.HubbleCluster
	sink       *otlpSink
	replicas   []*scaleOutReplica
	clientPort uint32
	// policyBefore is what the policy's status counted before the first
	// set; policyPerSet what one set adds to it.
	policyBefore, policyPerSet policyCounts
}

// scaleOutReplica is one replica: its process, pod name and metrics.
type scaleOutReplica struct {
	*process
	name, metrics string
}

func (r *scaleOutReplica) counter(t *testing.T, name string) int64 {
	t.Helper()
	return sumSamples(t, r.metrics, name, func(string) bool { return true })
}

// newScaleOut starts the cluster and n replicas in nodes mode. Each replica
// is a pod of its own name whose address, 127.0.0.<i+2>, the Pod object in
// the API server gives, as the kubelet would report it: the readers find the
// leader there.
func newScaleOut(t *testing.T, ca *certtest.CA, n int, aggregation string) *scaleOut {
	t.Helper()
	resetScaleOut(t)
	cluster, err := dataplanetest.NewHubbleCluster(ca, nil, scaleOutNodeNames()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	s := &scaleOut{cluster: cluster, sink: startOTLPSink(t), clientPort: 40000}
	peers := newScaleOutPeers(t, ca, s.sink.Addr, "scale-out")
	peers.aggregation = aggregation
	for i := range n {
		s.replicas = append(s.replicas, peers.start(t, fmt.Sprintf("replica-%d-%d", n, i), i, "hubble", fmt.Sprintf(`
  hubble:
    nodes:
      endpoint: %s
      tls:
        ca_file: %s
        cert_file: %s
        key_file: %s
        server_name_override: %s
    enforcer: enforcer`, cluster.PeerAddr, ca.CertFile, cluster.Client.CertFile, cluster.Client.KeyFile, dataplanetest.PeerServerName)))
	}
	waitFor(t, "every node to be read", time.Minute, func() bool { return s.allNodesRead(t) })
	s.leader(t)
	return s
}

// scaleOutPeers is what the replicas of one run share: the lease, the
// leader's port, the key pairs of the hop to the leader and the events' sink.
type scaleOutPeers struct {
	ca                *certtest.CA
	server, client    certtest.Pair
	lease, leaderPort string
	sink              string
	// aggregation is the leader exporter's interval: 1s unless a test
	// wants its records held longer.
	aggregation string
}

func newScaleOutPeers(t *testing.T, ca *certtest.CA, sink, lease string) *scaleOutPeers {
	t.Helper()
	_, port, _ := strings.Cut(freeAddr(t), ":")
	return &scaleOutPeers{ca: ca, server: ca.Server(t, "leader", scaleOutLeaderName), client: ca.Client(t, "replica"),
		lease: fmt.Sprintf("%s-%d", lease, time.Now().UnixNano()), leaderPort: port, sink: sink, aggregation: "1s"}
}

// scaleOutIP is the address of the i-th replica's pod.
func scaleOutIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+2) }

// start starts the i-th replica in nodes mode: the flow receiver given as
// YAML under receivers: (named receiver), learning into the leader
// exporter, and the leader receiver into the writer and the violation
// processor. Its Pod gives its address, where the readers find the leader.
func (p *scaleOutPeers) start(t *testing.T, name string, i int, receiver, receiverYAML string) *scaleOutReplica {
	t.Helper()
	ip := scaleOutIP(i)
	scaleOutPod(t, name, ip)
	metrics := freeAddr(t)
	host, port, _ := strings.Cut(metrics, ":")
	receivers := receiverYAML + fmt.Sprintf(`
  leader:
    endpoint: %s:%s
    tls:
      cert_file: %s
      key_file: %s
      client_ca_file: %s
    enforcer: enforcer`, ip, p.leaderPort, p.server.CertFile, p.server.KeyFile, p.ca.CertFile)
	exporters := fmt.Sprintf(`
  leader:
    port: %s
    tls:
      ca_file: %s
      cert_file: %s
      key_file: %s
      server_name_override: %s
    aggregation:
      interval: %s`, p.leaderPort, p.ca.CertFile, p.client.CertFile, p.client.KeyFile, scaleOutLeaderName, p.aggregation)
	config := writeConfig(t, name+".yaml", fmt.Sprintf(scaleOutConfig, p.lease, receivers, exporters, "", p.sink, host, port,
		"["+receiver+"]", "[learning]", "[leader]", `
    logs/learned:
      receivers: [leader]
      exporters: [k8swriter, forward/violations]`))
	proc := startBinary(t, config, "KUBECONFIG="+kubeconfig, "POD_NAME="+name, "POD_NAMESPACE="+scaleOutNamespace)
	return &scaleOutReplica{process: proc, name: name, metrics: metrics}
}

func scaleOutNodeNames() []string {
	names := make([]string, scaleOutNodes)
	for i := range names {
		names[i] = scaleOutNode(i)
	}
	return names
}

// scaleOutPod creates the Pod that names a replica's address.
func scaleOutPod(t *testing.T, name, ip string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: scaleOutNamespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "enforcer", Image: "network-enforcer"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	must(t, env.Client.Get(ctx, types.NamespacedName{Namespace: scaleOutNamespace, Name: name}, pod))
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	must(t, env.Client.Status().Update(ctx, pod))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pod) })
}

// leader is the replica that leads, once one does.
func (s *scaleOut) leader(t *testing.T) *scaleOutReplica {
	t.Helper()
	var leader *scaleOutReplica
	waitFor(t, "a replica to lead", time.Minute, func() bool {
		for _, r := range s.replicas {
			select {
			case <-r.exited:
				continue
			default:
			}
			if terms(t, r.metrics) > 0 {
				leader = r
			}
		}
		return leader != nil
	})
	return leader
}

// allNodesRead reports whether the live replicas agree on the members (each
// counts all of them) and read every node once: the sum of their nodes
// gauges is the cluster's size. Until they agree, a node may still move.
func (s *scaleOut) allNodesRead(t *testing.T) bool {
	t.Helper()
	var live []*scaleOutReplica
	for _, r := range s.replicas {
		select {
		case <-r.exited:
		default:
			live = append(live, r)
		}
	}
	var n int64
	for _, r := range live {
		if r.counter(t, "network_enforcer_members") != int64(len(live)) {
			return false
		}
		n += r.counter(t, "network_enforcer_receiver_nodes")
	}
	return n == scaleOutNodes
}

// requests is how many GetFlows requests each node has had.
func (s *scaleOut) requests() map[string]int {
	out := map[string]int{}
	for _, name := range scaleOutNodeNames() {
		out[name] = len(s.cluster.Node(name).Requests())
	}
	return out
}

// push has the nodes report the set's connections.
func (s *scaleOut) push(set scaleOutFlowSet) {
	s.cluster.Push(set.responses(&s.clientPort)...)
}

// settle waits until the set is learned and reported, and for the writes
// and events to stop, and returns what the run learned and reported.
func (s *scaleOut) settle(t *testing.T, set scaleOutFlowSet) scaleOutRun {
	t.Helper()
	return settleScaleOut(t, s.sink, set)
}

// logFigures logs what the replicas read and the leader received, and
// returns the flows read.
func (s *scaleOut) logFigures(t *testing.T, set scaleOutFlowSet) int64 {
	t.Helper()
	leader := s.leader(t)
	var flows int64
	for _, r := range s.replicas {
		flows += r.counter(t, "network_enforcer_receiver_flows_accepted")
	}
	received := sumSamples(t, leader.metrics, "otelcol_receiver_accepted_log_records", func(line string) bool {
		return strings.Contains(line, `receiver="leader"`)
	})
	t.Logf("%d replicas: %d connections, %d flows read, the leader received %d records", len(s.replicas), len(set), flows, received)
	return flows
}

// scaleOutPolicyMode is the mode the runs' api policy is in.
const scaleOutPolicyMode = v1alpha1.PolicyModeMonitor

// resetScaleOut leaves the guarded namespace with the monitor-mode policy of
// the api's ingress only (made by a relay replica the first time, as a
// person promotes a proposal), without the client's egress proposal.
func resetScaleOut(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var policy v1alpha1.WorkloadNetworkPolicy
	if err := env.Client.Get(ctx, scaleOutPolicy, &policy); err != nil || policy.Spec.Mode != scaleOutPolicyMode {
		makeScaleOutPolicy(t)
	}
	egress := &v1alpha1.WorkloadNetworkPolicyProposal{}
	egress.Namespace, egress.Name = "guarded", "deployment-client-egress"
	if err := env.Client.Delete(ctx, egress); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitFor(t, "the client's egress proposal to go", time.Minute, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: "guarded", Name: egress.Name}, egress))
	})
}

// makeScaleOutPolicy learns the api's ingress from the client on 8080
// through a relay replica, promotes it to monitor and stops the replica.
func makeScaleOutPolicy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	resetGuarded(t)
	relay := dataplanetest.NewHubbleRelay(nil)
	relay.Push(dataplanetest.NewHubbleConnection(caller, api, 39999, 8080, dataplanetest.ConnectionUnenforced)...)
	p := startRelayReplica(t, "policy", certtest.NewCA(t, "policy-ca"), relay, startOTLPSink(t).Addr)
	proposal := &v1alpha1.WorkloadNetworkPolicyProposal{}
	waitFor(t, "the api's ingress proposal", time.Minute, func() bool {
		return env.Client.Get(ctx, scaleOutPolicy, proposal) == nil
	})
	patchLabels(t, proposal, map[string]string{v1alpha1.PromoteLabel: string(scaleOutPolicyMode)})
	waitFor(t, "the api's policy", time.Minute, func() bool {
		return env.Client.Get(ctx, scaleOutPolicy, &v1alpha1.WorkloadNetworkPolicy{}) == nil
	})
	must(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.exited
}

// startRelayReplica serves relay over TLS with the relay's server name and
// starts one replica in relay mode that reads all of it, learns into the
// writer and reports violations to sink.
func startRelayReplica(t *testing.T, name string, ca *certtest.CA, relay *dataplanetest.HubbleRelay, sink string) *process {
	t.Helper()
	addr := grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, relay) }).Addr
	host, port, _ := strings.Cut(freeAddr(t), ":")
	config := writeConfig(t, name+".yaml", fmt.Sprintf(scaleOutConfig, "scale-out-"+name, fmt.Sprintf(`
  hubble:
    relay:
      endpoint: %s
      tls:
        ca_file: %s
        server_name_override: ui.hubble-relay.cilium.io
    backfill:
      since: 876000h
    leader_elector: leader_elector`, addr, ca.CertFile), "", "", sink, host, port,
		"[hubble]", "[learning]", "[k8swriter, forward/violations]", ""))
	return startBinary(t, config, "KUBECONFIG="+kubeconfig, "POD_NAME="+name+"-replica")
}

// settleScaleOut waits until the client's egress proposal holds every
// allowed connection's port and the sink has an event for every violation,
// then until nothing changes for a few seconds, and returns the run. Time
// must pass because the observed flows have no telemetry of what is still to
// be written (the writer's unwritten gauge counts edges, not flows), and
// after a kill the dead leader's counters are gone with it, so that drained
// cannot tell: settled is seen only as nothing changing for a while.
func settleScaleOut(t *testing.T, sink *otlpSink, set scaleOutFlowSet) scaleOutRun {
	t.Helper()
	ctx := context.Background()
	var run scaleOutRun
	var learned []int32
	read := func() {
		run, learned = scaleOutRun{violations: map[string]int{}, flows: map[int32]int64{}}, nil
		var p v1alpha1.WorkloadNetworkPolicyProposal
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "guarded", Name: "deployment-client-egress"}, &p); err == nil {
			b, err := json.Marshal(p.Spec)
			must(t, err)
			run.egress = string(b)
			learned = learnedPorts(&p.Spec)
			for _, e := range p.Status.Observed {
				run.flows[e.Port] += e.Flows
			}
		}
		for _, lr := range sink.Records() {
			if lr.EventName() != violationevent.Observed {
				continue
			}
			port, _ := eventAttrs(lr.Attributes().AsRaw()).Get("destination.port")
			run.violations[port]++
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	waitFor(t, "every connection learned and every violation reported", 2*time.Minute+time.Second, func() bool {
		if time.Now().After(deadline) {
			t.Fatalf("not every connection learned or violation reported: the client's egress %s, its flows by port %v, violations by port %v", run.egress, run.flows, run.violations)
		}
		read()
		for _, c := range set {
			if c.src == caller && (!slices.Contains(learned, int32(c.port)) || run.flows[int32(c.port)] == 0) {
				return false
			}
			if run.violations[strconv.FormatUint(uint64(c.port), 10)] == 0 {
				return false
			}
		}
		return true
	})
	last, stable := "", time.Now()
	for time.Since(stable) < 4*time.Second {
		read()
		if s := fmt.Sprint(run); s != last {
			last, stable = s, time.Now()
		}
		// The poll's own interval, so that the loop does not spin while it
		// waits for the run to settle.
		time.Sleep(200 * time.Millisecond)
	}
	return run
}

// learnedPorts lists every port that a proposal's egress rules allow, each
// port range spelled out.
func learnedPorts(spec *v1alpha1.PolicySpec) []int32 {
	var out []int32
	if spec.Kubernetes == nil {
		return nil
	}
	for _, rule := range spec.Kubernetes.Egress {
		for _, p := range rule.Ports {
			if p.Port == nil {
				continue
			}
			end := p.Port.IntVal
			if p.EndPort != nil {
				end = *p.EndPort
			}
			for port := p.Port.IntVal; port <= end; port++ {
				out = append(out, port)
			}
		}
	}
	return out
}

// TestScaleOutIstio: two replicas each take the ztunnel records that reach
// them, as node agents that balance over the replicas send them; each learns
// and sends the leader what it learned. Every connection is learned, every
// violation reported once, and both replicas did a share of the work.
func TestScaleOutIstio(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	resetScaleOut(t)
	ingress := types.NamespacedName{Namespace: "guarded", Name: "deployment-intruder-ingress"}
	if err := env.Client.Delete(ctx, &v1alpha1.WorkloadNetworkPolicyProposal{ObjectMeta: metav1.ObjectMeta{
		Namespace: ingress.Namespace, Name: ingress.Name}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	ca := certtest.NewCA(t, "scale-out-istio-ca")
	const ztunnelName = "ztunnel.network-enforcer.test"
	ztunnelServer := ca.Server(t, "otlp", ztunnelName)
	nodeAgent := ca.Client(t, "node-agent")
	sink := startOTLPSink(t)
	peers := newScaleOutPeers(t, ca, sink.Addr, "scale-out-istio")
	_, ztunnelPort, _ := strings.Cut(freeAddr(t), ":")
	var replicas []*scaleOutReplica
	var senders []*grpc.ClientConn
	for i := range 2 {
		ip := scaleOutIP(i)
		replicas = append(replicas, peers.start(t, fmt.Sprintf("istio-replica-%d", i), i, "ztunnel", fmt.Sprintf(`
  ztunnel:
    protocols:
      grpc:
        endpoint: %s:%s
        tls:
          cert_file: %s
          key_file: %s
          client_ca_file: %s
    join_window: 500ms`, ip, ztunnelPort, ztunnelServer.CertFile, ztunnelServer.KeyFile, ca.CertFile)))
		senders = append(senders, otlpClient(t, ip+":"+ztunnelPort, ca, nodeAgent, ztunnelName))
	}
	(&scaleOut{replicas: replicas}).leader(t)

	// Each connection's lines to one replica, the next connection's to the
	// other, as a node agent's requests are balanced.
	var learned, violating []uint32
	for i := range uint32(12) {
		learned = append(learned, 30000+i)
		violating = append(violating, 30500+i)
	}
	n := 0
	send := func(src, dst dataplanetest.End, port uint32) {
		n++
		lines := dataplanetest.NewZtunnelConnection(src, dst, uint32(45000+n), port, dataplanetest.ConnectionUnenforced)
		sendLines(t, senders[n%len(senders)], lines)
	}
	for i := range learned {
		send(caller, intruder, learned[i])
		send(intruder, api, violating[i])
	}

	read := func() (string, map[string]int) {
		var p v1alpha1.WorkloadNetworkPolicyProposal
		spec := ""
		if err := env.Client.Get(ctx, ingress, &p); err == nil {
			b, err := json.Marshal(p.Spec)
			must(t, err)
			spec = string(b)
		}
		events := map[string]int{}
		for _, lr := range sink.Records() {
			if lr.EventName() == violationevent.Observed {
				port, _ := eventAttrs(lr.Attributes().AsRaw()).Get("destination.port")
				events[port]++
			}
		}
		return spec, events
	}
	waitFor(t, "every connection learned and every violation reported", 2*time.Minute, func() bool {
		spec, events := read()
		for i := range learned {
			if !strings.Contains(spec, `"`+strconv.FormatUint(uint64(learned[i]), 10)+`"`) ||
				events[strconv.FormatUint(uint64(violating[i]), 10)] == 0 {
				return false
			}
		}
		return true
	})
	// A violation reported twice would be a record that a replica sends the
	// leader again, or that the leader takes twice: wait until none is on
	// its way (drained), then count.
	drained(t, sink, replicas)
	_, events := read()
	for port, count := range events {
		if count != 1 {
			t.Errorf("the violation on port %s was reported %d times", port, count)
		}
	}
	for _, r := range replicas {
		if got := r.counter(t, "network_enforcer_receiver_flows_accepted"); got == 0 {
			t.Errorf("%s took no ztunnel record: the node agents' records were not shared", r.name)
		}
	}
}

// drained waits until nothing is on its way between the replicas and the
// sink, as their telemetry says: no replica's leader exporter holds an edge
// for its next aggregation, the leaders accepted every record that the
// exporters sent, and the sink received every event that the replicas' OTLP
// exporters sent. What the sink holds then is all that the records sent so
// far make.
func drained(t *testing.T, sink *otlpSink, replicas []*scaleOutReplica) {
	t.Helper()
	var held, sent, accepted, exported int64
	waitFor(t, "the replicas to have sent the leader, and the leader the sink, everything", time.Minute, func() bool {
		held, sent, accepted, exported = 0, 0, 0, 0
		for _, r := range replicas {
			held += r.counter(t, "network_enforcer_leader_exporter_edges_held")
			sent += r.counter(t, "network_enforcer_leader_exporter_records_sent")
			accepted += r.counter(t, "network_enforcer_leader_receiver_records_accepted")
			exported += sumSamples(t, r.metrics, "otelcol_exporter_sent_log_records", func(line string) bool {
				return strings.Contains(line, `exporter="otlp_grpc"`)
			})
		}
		return held == 0 && sent > 0 && sent == accepted && exported == int64(len(sink.Records()))
	})
	t.Logf("drained: %d records sent to the leader, %d accepted, %d events exported, %d edges held", sent, accepted, exported, held)
}

// otlpClient connects to an OTLP/gRPC listener with a client certificate,
// checking the server's certificate for serverName.
func otlpClient(t *testing.T, addr string, ca *certtest.CA, cert certtest.Pair, serverName string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert.TLS}, ServerName: serverName, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// sendLines sends ztunnel lines as OTLP log records, retrying while the
// replica starts.
func sendLines(t *testing.T, conn *grpc.ClientConn, lines []string) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, l := range lines {
		sl.LogRecords().AppendEmpty().Body().SetStr(l)
	}
	// The replica's listener may not be up yet: the sender tries again, as a
	// node agent does, until the replica takes the lines.
	var err error
	if !testwait.Try(t, "a replica to take the ztunnel lines", time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		return err == nil
	}) {
		t.Fatalf("sending ztunnel lines: %v", err)
	}
}

// memberAnnotations is what a replica's membership Lease says: when it was
// last renewed, its checkpoints, the keys it released, and what it counted
// as the leader. The Lease stays, expired, after the replica was killed.
type memberAnnotations struct {
	renewed              time.Time
	checkpoints, counted map[string]time.Time
	released             map[string]bool
}

// reading is the checkpoints of the keys that the replica still reads.
func (a memberAnnotations) reading() map[string]time.Time {
	out := map[string]time.Time{}
	for k, t := range a.checkpoints {
		if !a.released[k] {
			out[k] = t
		}
	}
	return out
}

// memberLease reads replica's membership Lease, with what its checkpoint
// shards (the Leases labelled as its shards) publish.
func memberLease(t *testing.T, replica string) memberAnnotations {
	t.Helper()
	var leases coordinationv1.LeaseList
	must(t, env.Client.List(context.Background(), &leases, client.InNamespace(scaleOutNamespace),
		client.HasLabels{v1alpha1.MemberOfLabel}))
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil || !strings.HasPrefix(*l.Spec.HolderIdentity, replica+"_") {
			continue
		}
		a := memberAnnotations{checkpoints: map[string]time.Time{}, counted: map[string]time.Time{}, released: map[string]bool{}}
		if l.Spec.RenewTime != nil {
			a.renewed = l.Spec.RenewTime.Time
		}
		a.add(t, l.Annotations)
		for _, s := range leases.Items {
			if s.Labels[v1alpha1.ShardOfLabel] == l.Name {
				a.add(t, s.Annotations)
			}
		}
		return a
	}
	t.Fatalf("no membership Lease of %s", replica)
	return memberAnnotations{}
}

// add adds what one Lease's annotations publish.
func (a memberAnnotations) add(t *testing.T, annotations map[string]string) {
	t.Helper()
	maps.Copy(a.checkpoints, timesAnnotation(t, annotations[v1alpha1.CheckpointsAnnotation]))
	maps.Copy(a.counted, timesAnnotation(t, annotations[v1alpha1.CountedAnnotation]))
	if v := annotations[v1alpha1.ReleasedAnnotation]; v != "" {
		var keys []string
		must(t, json.Unmarshal([]byte(v), &keys))
		for _, k := range keys {
			a.released[k] = true
		}
	}
}

// timesAnnotation reads a JSON object from key to RFC 3339 time.
func timesAnnotation(t *testing.T, v string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	if v == "" {
		return out
	}
	var raw map[string]string
	must(t, json.Unmarshal([]byte(v), &raw))
	for k, s := range raw {
		ts, err := time.Parse(time.RFC3339Nano, s)
		must(t, err)
		out[k] = ts
	}
	return out
}
