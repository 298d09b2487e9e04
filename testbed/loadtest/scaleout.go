package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/cilium/api/v1/observer"

	// The collector's otlp_grpc exporter compresses with gzip by default.
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/testbed/replicas"
)

// The scale-out path: a fake Cilium cluster serves the Hubble fixture, spread
// over its nodes by connection, to R reader replicas (hubble receiver in nodes
// mode, learning, leader exporter) that share the nodes, and a leader replica
// (leader receiver, writer, violation processor) takes what they send.

const (
	// Goals of the scale-out path.
	goalRecordsPer1000 = 10.0
	goalLeaderCPU      = 0.2 // µs per cluster flow
	goalViolationP99   = time.Second
	// violations is how many violating connections the latency run pushes,
	// violationSpacing apart.
	violations       = 200
	violationSpacing = 15 * time.Millisecond
)

// The guarded namespace's pods of the fixture cluster (as the end-to-end
// tests name them): the api, whose ingress gets a monitor-mode policy that
// allows the client on 8080, and the intruder, whose connections violate it.
var (
	guardedAPI      = guardedPod("api", "api-5c6d7e8f9-a1b2c", "10.0.8.10", 4102)
	guardedCaller   = guardedPod("client", "client-6d7e8f9a0-d3e4f", "10.0.8.11", 4101)
	guardedIntruder = guardedPod("intruder", "intruder-7e8f9a0b1-g5h6i", "10.0.8.12", 4103)
	guardedPolicy   = types.NamespacedName{Namespace: "guarded", Name: "deployment-api-ingress"}
)

func guardedPod(workload, pod, ip string, identity uint32) dataplanetest.End {
	return dataplanetest.End{Namespace: "guarded", Pod: pod, IP: ip, Workload: workload, Identity: identity, ServiceAccount: workload}
}

// scaleOutReport is what the scale-out path measured.
type scaleOutReport struct {
	readers, nodes int
	flows          int64
	perNode        []int
	// received is the records that the leader received during the bulk.
	received int64
	elapsed  time.Duration
	leader   side
	reader   []side
	read     []int64 // flows each reader counted
	// relay is the hubble path's enforcer (relay mode, its first run) when
	// it ran in the same run.
	relay      *side
	relayFlows int
	// latencies of the violations, in push order of arrival; events counts
	// the events of each violating connection.
	latencies      []time.Duration
	events         map[int64]int
	violationsSent int
	notes          []string
}

func (s *scaleOutReport) recordsPer1000() float64 {
	return float64(s.received) * 1000 / float64(s.flows)
}

func (s *scaleOutReport) leaderCPU() float64 {
	return float64(s.leader.cpu.Nanoseconds()) / 1e3 / float64(s.flows)
}

func (s *scaleOutReport) rate() float64 { return float64(s.flows) / s.elapsed.Seconds() }

// totalCPU is every replica's CPU per cluster flow, in µs.
func (s *scaleOutReport) totalCPU() float64 {
	cpu := s.leader.cpu
	for _, r := range s.reader {
		cpu += r.cpu
	}
	return float64(cpu.Nanoseconds()) / 1e3 / float64(s.flows)
}

func (s *scaleOutReport) percentile(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(s.latencies)
	slices.Sort(sorted)
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// eventsPerConnection is the fewest and most events a violating connection
// had (0 for one whose event never came).
func (s *scaleOutReport) eventsPerConnection() (lo, hi int) {
	lo = -1
	for i := range s.violationsSent {
		n := s.events[int64(violationPort(i))]
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return max(lo, 0), hi
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func (s *scaleOutReport) print(title string) {
	fmt.Printf("\n%s: %d cluster flows, %d readers, %d nodes\n", title, s.flows, s.readers, s.nodes)
	for _, n := range s.notes {
		fmt.Printf("  %s\n", n)
	}
	fmt.Printf("  setup: the hubble fixture re-stamped and repeated, spread over the nodes by connection (both ends on one node), served over mutual TLS; flows per node %v\n", s.perNode)
	fmt.Printf("  (a) records received by the leader: %d, %.2f per 1,000 cluster flows (goal ≤ %.0f: %s)\n",
		s.received, s.recordsPer1000(), goalRecordsPer1000, met(s.recordsPer1000() <= goalRecordsPer1000))
	fmt.Printf("  (b) leader: CPU %.3f µs per cluster flow (goal ≤ %.1f: %s)  CPU %s  peak RSS %d MiB\n",
		s.leaderCPU(), goalLeaderCPU, met(s.leaderCPU() <= goalLeaderCPU), s.leader.cpu.Round(time.Millisecond), s.leader.peakRSS>>20)
	for i, r := range s.reader {
		fmt.Printf("  (c) reader %d: %d flows read, CPU %.2f µs per flow read  peak RSS %d MiB\n",
			i+1, s.read[i], float64(r.cpu.Nanoseconds())/1e3/float64(max(1, s.read[i])), r.peakRSS>>20)
	}
	fmt.Printf("  (d) cluster throughput: %.0f flows/s (%s); all replicas' CPU %.2f µs per cluster flow\n",
		s.rate(), s.elapsed.Round(time.Millisecond), s.totalCPU())
	if s.relay != nil {
		fmt.Printf("      ÷ the hubble path's relay-mode enforcer (%s; per flow message: %.0f flows/s, CPU %.2f µs/flow): throughput %.2f, CPU per flow %.2f\n",
			s.relay.variant, s.relay.rate(s.relayFlows), s.relay.cpuPerFlow(s.relayFlows),
			s.rate()/s.relay.rate(s.relayFlows), s.totalCPU()/s.relay.cpuPerFlow(s.relayFlows))
	} else {
		fmt.Printf("      (the hubble path did not run: no ratio to the relay-mode enforcer)\n")
	}
	lo, hi := s.eventsPerConnection()
	p99 := s.percentile(0.99)
	fmt.Printf("  violation latency, push to event at the sink, %d violating connections %s apart: p50 %s  p99 %s  max %s (goal p99 ≤ %s: %s)\n",
		s.violationsSent, violationSpacing, s.percentile(0.5).Round(time.Millisecond), p99.Round(time.Millisecond),
		s.percentile(1).Round(time.Millisecond), goalViolationP99, met(p99 <= goalViolationP99 && len(s.latencies) == s.violationsSent))
	fmt.Printf("  events per violating connection: min %d  max %d (%d of %d arrived; must be exactly 1: %s)\n",
		lo, hi, len(s.latencies), s.violationsSent, met(lo == 1 && hi == 1))
}

// summary is the path's line under the summary.
func (s *scaleOutReport) summary() string {
	lo, hi := s.eventsPerConnection()
	p99 := s.percentile(0.99)
	line := fmt.Sprintf("scaleout (%d readers, %d nodes): %.0f flows/s; leader %.2f records/1k flows (≤ %.0f %s), %.3f µs CPU/flow (≤ %.1f %s); "+
		"violation p99 %s (≤ %s %s), events/connection %d..%d (1 %s)",
		s.readers, s.nodes, s.rate(), s.recordsPer1000(), goalRecordsPer1000, met(s.recordsPer1000() <= goalRecordsPer1000),
		s.leaderCPU(), goalLeaderCPU, met(s.leaderCPU() <= goalLeaderCPU),
		p99.Round(time.Millisecond), goalViolationP99, met(p99 <= goalViolationP99 && len(s.latencies) == s.violationsSent),
		lo, hi, met(lo == 1 && hi == 1))
	if s.relay != nil {
		line += fmt.Sprintf("; ÷ relay-mode enforcer: throughput %.2f, CPU/flow %.2f",
			s.rate()/s.relay.rate(s.relayFlows), s.totalCPU()/s.relay.cpuPerFlow(s.relayFlows))
	}
	return line
}

// violationPort is the destination port of the i-th violating connection.
func violationPort(i int) uint32 { return 32000 + uint32(i) }

// clusterNode names the fake cluster's i-th node.
func clusterNode(i int) string { return fmt.Sprintf("worker-%d", i+1) }

// connectionKey names a flow's connection, the same for both directions and
// both ends: its protocol and its two ends' addresses and ports, in order.
func connectionKey(m *observer.GetFlowsResponse) string {
	f := m.GetFlow()
	if f == nil {
		return ""
	}
	proto, sp, dp := "other", uint32(0), uint32(0)
	switch l4 := f.GetL4(); {
	case l4.GetTCP() != nil:
		proto, sp, dp = "tcp", l4.GetTCP().GetSourcePort(), l4.GetTCP().GetDestinationPort()
	case l4.GetUDP() != nil:
		proto, sp, dp = "udp", l4.GetUDP().GetSourcePort(), l4.GetUDP().GetDestinationPort()
	case l4.GetSCTP() != nil:
		proto, sp, dp = "sctp", l4.GetSCTP().GetSourcePort(), l4.GetSCTP().GetDestinationPort()
	case l4.GetICMPv4() != nil:
		proto = "icmp"
	case l4.GetICMPv6() != nil:
		proto = "icmp6"
	}
	a := fmt.Sprintf("%s:%d", f.GetIP().GetSource(), sp)
	b := fmt.Sprintf("%s:%d", f.GetIP().GetDestination(), dp)
	if b < a {
		a, b = b, a
	}
	return proto + " " + a + " " + b
}

// clusterFlows is the hubble path's flows (the fixture re-stamped, repeated to
// -flows) spread over the nodes: the c-th connection of the fixture in its
// k-th copy is on node (c+k) mod n, both ends' flows of it, so that every
// copy loads every node. It returns each node's responses in order, and how
// many flows they hold in all.
func (lt *loadtest) clusterFlows(n int) ([][]*observer.GetFlowsResponse, int64, error) {
	fixture, flowMsgs, err := lt.hubbleFixture()
	if err != nil {
		return nil, 0, err
	}
	conns := map[string]int{}
	connOf := make([]int, len(fixture))
	for i, m := range fixture {
		key := connectionKey(m)
		c, ok := conns[key]
		if !ok {
			c = len(conns)
			conns[key] = c
		}
		connOf[i] = c
	}
	// Each node's copy of the fixture, with its name.
	named := make([][]*observer.GetFlowsResponse, n)
	for node := range named {
		for _, m := range fixture {
			c := proto.Clone(m).(*observer.GetFlowsResponse)
			c.NodeName = clusterNode(node)
			if f := c.GetFlow(); f != nil {
				f.NodeName = c.NodeName
			}
			named[node] = append(named[node], c)
		}
	}
	_, copies := repeat(fixture, lt.opts.flows)
	out := make([][]*observer.GetFlowsResponse, n)
	for k := range copies {
		for i := range fixture {
			node := (connOf[i] + k) % n
			out[node] = append(out[node], named[node][i])
		}
	}
	return out, int64(copies * flowMsgs), nil
}

// scaleout measures the scale-out path; see scaleOutReport.
func (lt *loadtest) scaleout(ctx context.Context) (result, error) {
	nodes, readers := lt.opts.scaleOutNodes, lt.opts.scaleOutReaders
	names := make([]string, nodes)
	for i := range names {
		names[i] = clusterNode(i)
	}
	perNode, want, err := lt.clusterFlows(nodes)
	if err != nil {
		return result{}, err
	}
	rep := &scaleOutReport{readers: readers, nodes: nodes, flows: want, relay: lt.relayRun, relayFlows: lt.relayFlows}
	for _, msgs := range perNode {
		n := 0
		for _, m := range msgs {
			if m.GetFlow() != nil {
				n++
			}
		}
		rep.perNode = append(rep.perNode, n)
	}
	cluster, err := dataplanetest.NewHubbleCluster(lt.ca, nil, names...)
	if err != nil {
		return result{}, err
	}
	defer cluster.Close()
	sink, err := replicas.StartViolationSink()
	if err != nil {
		return result{}, err
	}
	defer sink.Stop()
	server, err := lt.ca.IssueServer("leader", replicas.LeaderServerName)
	if err != nil {
		return result{}, err
	}
	_, leaderPort, _ := strings.Cut(func() string { a, _ := freeAddr(); return a }(), ":")
	lease := fmt.Sprintf("loadtest-scaleout-%d", time.Now().UnixNano())

	// The leader first, until it leads.
	var all []*process
	defer func() {
		for _, p := range all {
			p.Stop()
		}
	}()
	metrics, err := freeAddr()
	if err != nil {
		return result{}, err
	}
	if err := replicas.RunningPod(ctx, lt.env.Client, namespace, "scaleout-leader", replicas.LeaderIP); err != nil {
		return result{}, err
	}
	config, err := lt.writeConfig("scaleout-leader", replicas.Leader{Lease: lease, Namespace: namespace,
		Listen: replicas.LeaderIP + ":" + leaderPort, ServerCert: server.CertFile, ServerKey: server.KeyFile, ClientCA: lt.ca.CertFile,
		Sink: sink.Addr, Metrics: metrics}.YAML())
	if err != nil {
		return result{}, err
	}
	leader, err := lt.launcher.StartAs("scaleout-leader", namespace, config, metrics)
	if err != nil {
		return result{}, err
	}
	all = append(all, leader)
	if err := replicas.Poll(ctx, "the leader to lead", 2*time.Minute, all, func() (bool, error) {
		n, err := leader.Counter(replicas.MetricTerms)
		return n >= 1, err
	}); err != nil {
		return result{}, err
	}

	// The readers, until they share every node.
	var rs []*process
	for i := range readers {
		pod := fmt.Sprintf("scaleout-reader-%d", i+1)
		if err := replicas.RunningPod(ctx, lt.env.Client, namespace, pod, replicas.ReaderIP(i)); err != nil {
			return result{}, err
		}
		metrics, err := freeAddr()
		if err != nil {
			return result{}, err
		}
		config, err := lt.writeConfig(pod, lt.readerConfig(lease, cluster, leaderPort, metrics).YAML())
		if err != nil {
			return result{}, err
		}
		p, err := lt.launcher.StartAs(pod, namespace, config, metrics)
		if err != nil {
			return result{}, err
		}
		all = append(all, p)
		rs = append(rs, p)
	}
	// Every node is read once the readers agree on the members and every node
	// has had a request, and no node has had a new one for a few seconds (a
	// node that moves to the reader that joined is asked for again).
	var seen string
	requests := func() []int {
		var out []int
		for _, name := range names {
			out = append(out, len(cluster.Node(name).Requests()))
		}
		return out
	}
	var last []int
	var stable time.Time
	if err := replicas.Poll(ctx, "the readers to share every node", 2*time.Minute, all, func() (bool, error) {
		var b strings.Builder
		ok := true
		for _, p := range rs {
			m, err := p.Counter(replicas.MetricMembers)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(&b, "%s: %d members; ", p.Name, m)
			ok = ok && m == int64(readers)
		}
		now := requests()
		fmt.Fprintf(&b, "requests by node %v", now)
		seen = b.String()
		if !ok || slices.Contains(now, 0) || !slices.Equal(now, last) {
			last, stable = now, time.Now()
			return false, nil
		}
		return time.Since(stable) > 3*time.Second, nil
	}); err != nil {
		return result{}, fmt.Errorf("%w (%s)", err, seen)
	}
	if terms, err := replicas.Sum(rs, replicas.MetricTerms); err != nil || terms != 0 {
		return result{}, errors.Join(err, fmt.Errorf("a reader began %d terms of leadership", terms))
	}

	// The bulk: every node's flows at once, each node pushed by its own
	// goroutine as agents send at once.
	leaderCPU0, err := leader.CPU()
	if err != nil {
		return result{}, err
	}
	readerCPU0 := make([]time.Duration, len(rs))
	for i, p := range rs {
		if readerCPU0[i], err = p.CPU(); err != nil {
			return result{}, err
		}
	}
	received0, err := leader.Counter(replicas.MetricLeaderAccepted)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, msgs := range perNode {
		node := cluster.Node(names[i])
		wg.Go(func() {
			const chunk = 4096
			for j := 0; j < len(msgs); j += chunk {
				node.Push(msgs[j:min(j+chunk, len(msgs))]...)
			}
		})
	}
	// Once every flow is counted, every push has returned; after a failure
	// the pushes are left to the end of the program.
	if err := replicas.Poll(ctx, "the readers to count every cluster flow", lt.opts.timeout, all, func() (bool, error) {
		n, err := replicas.Sum(rs, flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped)
		return n >= want, err
	}); err != nil {
		return result{}, err
	}
	// Then until the leader has everything the readers sent, with nothing
	// held for the next interval: the state must hold still for more than an
	// interval, and the end is when it first held.
	var end time.Time
	var leaderCPU time.Duration
	readerCPU := make([]time.Duration, len(rs))
	var lastSent int64 = -1
	var state string
	if err := replicas.Poll(ctx, "the leader to receive what the readers sent", lt.opts.timeout, all, func() (bool, error) {
		held, err1 := replicas.Sum(rs, replicas.MetricEdgesHeld)
		sent, err2 := replicas.Sum(rs, replicas.MetricRecordsSent)
		got, err3 := replicas.Sum([]*process{leader}, replicas.MetricLeaderAccepted, replicas.MetricLeaderDropped)
		if err := errors.Join(err1, err2, err3); err != nil {
			return false, err
		}
		state = fmt.Sprintf("held %d, sent %d, accepted or dropped %d", held, sent, got-received0)
		if held != 0 || got-received0 < sent || sent != lastSent {
			lastSent, end = sent, time.Time{}
			return false, nil
		}
		if end.IsZero() {
			end = time.Now()
			if leaderCPU, err = leader.CPU(); err != nil {
				return false, err
			}
			for i, p := range rs {
				if readerCPU[i], err = p.CPU(); err != nil {
					return false, err
				}
			}
		}
		return time.Since(end) > replicas.Interval*3/2, nil
	}); err != nil {
		return result{}, fmt.Errorf("%w (%s)", err, state)
	}
	rep.elapsed = end.Sub(start)
	received, err := leader.Counter(replicas.MetricLeaderAccepted)
	if err != nil {
		return result{}, err
	}
	rep.received = received - received0
	if rep.leader, err = measuredCPU(leader, "leader", leaderCPU-leaderCPU0); err != nil {
		return result{}, err
	}
	for i, p := range rs {
		s, err := measuredCPU(p, p.Name, readerCPU[i]-readerCPU0[i])
		if err != nil {
			return result{}, err
		}
		rep.reader = append(rep.reader, s)
		n, err := replicas.Sum([]*process{p}, flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped)
		if err != nil {
			return result{}, err
		}
		rep.read = append(rep.read, n)
	}
	sentTotal, err := replicas.Sum(rs, replicas.MetricRecordsSent)
	if err != nil {
		return result{}, err
	}
	rep.notes = append(rep.notes, fmt.Sprintf("the readers' leader exporters sent %d records; the leader accepted %d", sentTotal, rep.received))

	// The violations.
	if err := lt.monitorPolicy(ctx, cluster, names, all); err != nil {
		return result{}, err
	}
	if err := lt.violationLatency(ctx, cluster, names, sink, all, rep); err != nil {
		return result{}, err
	}
	return result{path: "scaleout", title: "scaleout (hubble nodes mode: readers -> leader, mutual TLS)", flows: int(want), scaleOut: rep}, nil
}

// readerConfig is a reading replica of the cluster's nodes, sending to the
// leader on leaderPort.
func (lt *loadtest) readerConfig(lease string, cluster *dataplanetest.HubbleCluster, leaderPort, metrics string) replicas.Reader {
	return replicas.Reader{Lease: lease, Namespace: namespace,
		Peer: cluster.PeerAddr, PeerServerName: dataplanetest.PeerServerName, CAFile: lt.ca.CertFile,
		NodeCert: cluster.Client.CertFile, NodeKey: cluster.Client.KeyFile, Backfill: backfill,
		LeaderPort: leaderPort, ClientCert: lt.client.CertFile, ClientKey: lt.client.KeyFile, Metrics: metrics}
}

// measuredCPU is a side of p with the CPU time given and its peak resident
// memory now.
func measuredCPU(p *process, name string, cpu time.Duration) (side, error) {
	rss, err := p.PeakRSS()
	if err != nil {
		return side{}, err
	}
	return side{name: name, cpu: cpu, peakRSS: rss}, nil
}

// monitorPolicy makes the api's ingress policy in monitor mode as a person
// does: the readers learn the client's connection to the api on 8080, the
// leader writes the proposal, and the proposal is promoted with the label.
func (lt *loadtest) monitorPolicy(ctx context.Context, cluster *dataplanetest.HubbleCluster, names []string, ps []*process) error {
	c := lt.env.Client
	var policy v1alpha1.WorkloadNetworkPolicy
	if err := c.Get(ctx, guardedPolicy, &policy); err == nil && policy.Spec.Mode == v1alpha1.PolicyModeMonitor {
		return nil
	}
	msgs := dataplanetest.NewHubbleConnection(guardedCaller, guardedAPI, 39999, 8080, dataplanetest.ConnectionUnenforced)
	for _, m := range msgs {
		m.NodeName = names[0]
		if f := m.GetFlow(); f != nil {
			f.NodeName = names[0]
		}
	}
	cluster.Push(msgs...)
	proposal := &v1alpha1.WorkloadNetworkPolicyProposal{}
	if err := replicas.Poll(ctx, "the api's ingress proposal", 2*time.Minute, ps, func() (bool, error) {
		return c.Get(ctx, guardedPolicy, proposal) == nil, nil
	}); err != nil {
		return err
	}
	patch := client.MergeFrom(proposal.DeepCopy())
	labels := proposal.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.PromoteLabel] = string(v1alpha1.PolicyModeMonitor)
	proposal.SetLabels(labels)
	if err := c.Patch(ctx, proposal, patch); err != nil {
		return err
	}
	return replicas.Poll(ctx, "the api's monitor-mode policy", 2*time.Minute, ps, func() (bool, error) {
		return c.Get(ctx, guardedPolicy, &policy) == nil && policy.Spec.Mode == v1alpha1.PolicyModeMonitor, nil
	})
}

// violationLatency pushes violating connections, each on a port of its own
// and a node in turn, and measures from each push to its event's arrival at
// the sink. One connection first, not measured, waits until the policy has
// reached the violation processor.
func (lt *loadtest) violationLatency(ctx context.Context, cluster *dataplanetest.HubbleCluster, names []string,
	sink *replicas.ViolationSink, ps []*process, rep *scaleOutReport,
) error {
	connection := func(i int, port uint32) []*observer.GetFlowsResponse {
		msgs := dataplanetest.NewHubbleConnection(guardedIntruder, guardedAPI, 45000+uint32(i)%20000, port, dataplanetest.ConnectionDryRunDenied)
		node := names[(i+len(names))%len(names)]
		for _, m := range msgs {
			m.NodeName = node
			if f := m.GetFlow(); f != nil {
				f.NodeName = node
			}
		}
		return msgs
	}
	const warmPort = 31999
	warmed := false
	if err := replicas.Poll(ctx, "the first violation event", 2*time.Minute, ps, func() (bool, error) {
		if len(sink.At(warmPort)) > 0 {
			return true, nil
		}
		if !warmed {
			cluster.Push(connection(-1, warmPort)...)
			warmed = true
		}
		return false, nil
	}); err != nil {
		return err
	}
	pushedAt := make([]time.Time, violations)
	next := time.Now()
	for i := range violations {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		msgs := connection(i, violationPort(i))
		pushedAt[i] = time.Now()
		cluster.Push(msgs...)
		next = next.Add(violationSpacing)
	}
	rep.violationsSent = violations
	// Every event, or a minute; then a few seconds more for any second one.
	_ = replicas.Poll(ctx, "every violation event", time.Minute, ps, func() (bool, error) {
		for i := range violations {
			if len(sink.At(violationPort(i))) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
	}
	rep.events = map[int64]int{}
	for i := range violations {
		at := sink.At(violationPort(i))
		rep.events[int64(violationPort(i))] = len(at)
		if len(at) > 0 {
			rep.latencies = append(rep.latencies, at[0].Sub(pushedAt[i]))
		}
	}
	return nil
}
