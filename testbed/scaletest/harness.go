package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/testbed/fakecluster"
	"github.com/kubewarden/network-enforcer/testbed/replicas"
)

// namespace holds the enforcer's Leases and Pods.
const namespace = "network-enforcer"

// options size and shape a run.
type options struct {
	nodes, readers                int
	workloadsPerNode, podsPerNode int
	minPeers, maxPeers            int
	clients                       float64 // the share of workloads that are clients
	rate                          float64 // flows per node per second
	duration                      time.Duration
	writeQPS                      float64 // the writer's write_qps; 0: its default
	writeBurst                    int
	observedInterval              time.Duration // the writer's observed_interval; 0: its default
	aggregation                   time.Duration // the readers' aggregation interval; 0: its default
	killReader, killLeader        bool
	addReader                     bool
	replace                       float64       // the share of nodes replaced
	monitored                     float64       // the share of served Deployments with a monitor-mode policy
	settle                        time.Duration // the longest wait for the counts; 0: three observed intervals and a minute
	retain                        int           // each node's ring buffer
	timeout                       time.Duration
	workers                       int
	gogc, gomemlimit              string
	keep                          bool
}

// nodeName names node i of the fake cluster, as the pods' spec.nodeName does.
func nodeName(i int) string { return fakecluster.NodeName(i) }

// nodeHost is node i's loopback address: 127.1.0.1 and on, apart from the
// replicas' 127.0.0.x.
func nodeHost(i int) string { return fmt.Sprintf("127.%d.%d.%d", 1+i/(250*250), (i/250)%250, 1+i%250) }

// harness is one run.
type harness struct {
	opts       options
	dir        string
	env        *controlplanetest.Env
	cs         *kubernetes.Clientset
	kubeconfig string
	ca         *certtest.CA
	client     certtest.Pair
	launcher   *replicas.Launcher
	cluster    *dataplanetest.HubbleCluster
	// replacing keeps a node's replacement apart from the pushes to it: a
	// push goes to the node that its name is now, not one deleted since.
	replacing  sync.RWMutex
	plan       *fakecluster.Plan
	traffic    *traffic
	lease      string
	leaderPort string
	leaderCfg  string
	// server is the leader receiver's key pair, writer the k8swriter's
	// settings: every replica's.
	server certtest.Pair
	writer string
	hosts  map[string]string // node name -> host

	mu      sync.Mutex
	names   []string // the current name of node i
	leader  *replicas.Process
	readers []*replicas.Process
	all     []*replicas.Process
	// writes sums the bytes of the membership and checkpoint objects that
	// the API server stored (Leases and ConfigMaps of the namespace), by
	// kind.
	writes sync.Map // kind -> *atomic.Int64
	rep    *report
	// monitored are the workloads whose ingress a monitor-mode policy
	// governs (monitorPolicies); sink receives the leader's violation
	// events.
	monitored map[int]bool
	sink      *replicas.ViolationSink
}

func (h *harness) nodeName(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[i]
}

func (h *harness) push(i int, msgs []*observer.GetFlowsResponse) {
	h.replacing.RLock()
	defer h.replacing.RUnlock()
	if n := h.cluster.Node(h.nodeName(i)); n != nil {
		n.Push(msgs...)
	}
}

// raiseFileLimit lifts the soft limit of open files to the hard one: every
// node's listener and every reader's connection to it is a file.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	return l.Cur, nil
}

func logf(format string, args ...any) { fakecluster.Logf(format, args...) }

// run is the whole harness: setup, the phases, the figures.
func run(ctx context.Context, o options) (_ *report, err error) {
	limit, err := raiseFileLimit()
	if err != nil {
		return nil, err
	}
	if need := uint64(3*o.nodes + 1000); limit < need {
		return nil, fmt.Errorf("open files: the limit is %d, %d nodes need about %d (raise the hard limit)", limit, o.nodes, need)
	}
	bin, err := controlplanetest.Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "network-enforcer-scaletest-")
	if err != nil {
		return nil, err
	}
	h := &harness{opts: o, dir: dir, rep: &report{opts: o}, hosts: map[string]string{}}
	h.launcher = &replicas.Launcher{Bin: bin, Dir: dir, GOGC: o.gogc, GOMEMLIMIT: o.gomemlimit}
	defer func() {
		for _, p := range h.all {
			select {
			case <-p.Exited:
			default:
				p.Stop()
			}
		}
		if h.cluster != nil {
			h.cluster.Close()
		}
		if h.sink != nil {
			h.sink.Stop()
		}
		if h.env != nil {
			err = errors.Join(err, h.env.Stop())
		}
		if o.keep || err != nil {
			fmt.Printf("work directory kept: %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	if err := h.drive(ctx); err != nil {
		return h.rep, err
	}
	return h.rep, nil
}

// setup starts the control plane, fills it, and starts the fake Cilium
// cluster.
func (h *harness) setup(ctx context.Context) error {
	o := h.opts
	logf("starting the control plane")
	var err error
	if h.env, err = controlplanetest.New(controlplanetest.Options{}); err != nil {
		return err
	}
	h.kubeconfig = filepath.Join(h.dir, "kubeconfig")
	if err := h.env.WriteKubeconfig(h.kubeconfig); err != nil {
		return err
	}
	h.launcher.Kubeconfig = h.kubeconfig
	if err := h.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	if h.cs, err = fakecluster.CreatingClient(h.env.Config, "scaletest"); err != nil {
		return err
	}
	workloads, pods := o.nodes*o.workloadsPerNode, o.nodes*o.podsPerNode
	h.plan = fakecluster.NewPlan(pods, workloads, max(5, workloads/100))
	h.plan.Nodes = o.nodes
	start := time.Now()
	if err := h.plan.Create(ctx, h.cs, o.workers); err != nil {
		return fmt.Errorf("creating the cluster: %w", err)
	}
	h.rep.created = time.Since(start)
	h.traffic = newTraffic(h.plan.Workloads(), o.nodes, o.minPeers, o.maxPeers, o.clients)
	h.rep.workloads, h.rep.pods, h.rep.edges = h.plan.WorkloadCount(), h.plan.PodCount(), len(h.traffic.edges)
	logf("created %d workloads and %d pods in %s; %d edges", h.rep.workloads, h.rep.pods, h.rep.created.Round(time.Second), h.rep.edges)
	if err := h.monitorPolicies(ctx); err != nil {
		return err
	}
	h.rep.monitored = len(h.monitored)
	if h.sink, err = replicas.StartViolationSink(); err != nil {
		return err
	}

	certs := filepath.Join(h.dir, "certs")
	if err := os.Mkdir(certs, 0o700); err != nil {
		return err
	}
	if h.ca, err = certtest.NewCAIn(certs, "scaletest"); err != nil {
		return err
	}
	if h.client, err = h.ca.IssueClient("network-enforcer"); err != nil {
		return err
	}
	h.names = make([]string, o.nodes)
	for i := range h.names {
		h.names[i] = nodeName(i)
		h.hosts[h.names[i]] = nodeHost(i)
	}
	start = time.Now()
	h.cluster, err = dataplanetest.NewHubbleClusterWith(h.ca, dataplanetest.HubbleClusterOptions{
		NodeHost: func(name string) string { return h.hosts[name] }, Retain: o.retain,
	}, nil, h.names...)
	if err != nil {
		return err
	}
	logf("started %d Hubble servers in %s", o.nodes, time.Since(start).Round(time.Millisecond))
	return nil
}

// drive starts the replicas, sends the flows, makes the faults and takes the
// figures.
func (h *harness) drive(ctx context.Context) error {
	o, rep := h.opts, h.rep
	server, err := h.ca.IssueServer("leader", replicas.LeaderServerName)
	if err != nil {
		return err
	}
	addr, err := replicas.FreeAddr()
	if err != nil {
		return err
	}
	_, h.leaderPort, _ = strings.Cut(addr, ":")
	h.lease = fmt.Sprintf("scaletest-%d", time.Now().UnixNano())
	metrics, err := replicas.FreeAddr()
	if err != nil {
		return err
	}
	writer := ""
	if o.writeQPS > 0 {
		writer += fmt.Sprintf("    write_qps: %g\n    write_burst: %d\n", o.writeQPS, max(o.writeBurst, 1))
	}
	if o.observedInterval > 0 {
		writer += fmt.Sprintf("    observed_interval: %s\n", o.observedInterval)
	}
	h.server, h.writer = server, writer
	if h.leaderCfg, err = h.launcher.WriteConfig("leader", h.replica(replicas.LeaderIP, metrics).YAML()); err != nil {
		return err
	}
	if err := replicas.RunningPod(ctx, h.env.Client, namespace, "scaletest-leader", replicas.LeaderIP); err != nil {
		return err
	}
	stopWatch, err := h.watchWrites(ctx)
	if err != nil {
		return err
	}
	defer stopWatch()
	api0, err := h.apiMetrics(ctx)
	if err != nil {
		return err
	}

	// The replicas, all at once as a rollout starts them; the figure runs
	// from here until every node is read.
	start := time.Now()
	if h.leader, err = h.launcher.StartAs("scaletest-leader", namespace, h.leaderCfg, metrics); err != nil {
		return err
	}
	h.all = append(h.all, h.leader)
	if err := replicas.Poll(ctx, "the leader to lead", 2*time.Minute, h.all, func() (bool, error) {
		n, err := h.leader.Counter(replicas.MetricTerms)
		return n >= 1, err
	}); err != nil {
		return err
	}
	for i := range o.readers {
		if err := h.startReader(ctx, i); err != nil {
			return err
		}
	}
	if err := h.waitAllRead(ctx, h.readers, o.timeout); err != nil {
		return err
	}
	rep.allRead = time.Since(start)
	logf("every node read %s after the replicas started", rep.allRead.Round(time.Millisecond))
	// The watch events from here on: client-go streams a watch's first
	// list as watch events, which the start would add.
	steady := time.Now()
	apiSteady, err := h.apiMetrics(ctx)
	if err != nil {
		return err
	}

	// The flows.
	cpu0, err := h.cpus()
	if err != nil {
		return err
	}
	leaderRecords0, _ := h.leader.Counter(replicas.MetricLeaderAccepted)
	flowStart := time.Now()
	stop := make(chan struct{})
	var trafficDone sync.WaitGroup
	trafficDone.Go(func() { h.traffic.run(stop, h, o.rate, 8) })
	stopped := false
	stopTraffic := func() {
		if !stopped {
			close(stop)
			trafficDone.Wait()
			stopped = true
		}
	}
	defer stopTraffic()

	// The faults, spread over the run.
	faults := h.faults()
	for i, f := range faults {
		at := flowStart.Add(o.duration * time.Duration(i+1) / time.Duration(len(faults)+1))
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
		if err := f(ctx); err != nil {
			return err
		}
	}
	if err := sleepUntil(ctx, flowStart.Add(o.duration)); err != nil {
		return err
	}
	stopTraffic()
	rep.flowTime = time.Since(flowStart)
	rep.sent = h.traffic.sent.Load()
	logf("sent %d flows in %s; waiting for the readers and the leader to take them", rep.sent, rep.flowTime.Round(time.Second))

	// Until the readers have read what was sent and the leader has all they
	// sent.
	live := h.liveReaders()
	var state string
	lastGot, gotSince := int64(-1), time.Now()
	if err := replicas.Poll(ctx, "the readers to read every flow and the leader to take what they sent", o.timeout, h.liveAll(), func() (bool, error) {
		held, err1 := replicas.Sum(live, replicas.MetricEdgesHeld)
		sent, err2 := replicas.Sum(live, replicas.MetricRecordsSent)
		got, err3 := replicas.Sum([]*replicas.Process{h.leader}, replicas.MetricLeaderAccepted, replicas.MetricLeaderDropped)
		read, err4 := h.readFlows()
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return false, err
		}
		queued, err := replicas.Sum(h.liveAll(), metricQueueSize)
		if err != nil {
			return false, err
		}
		state = fmt.Sprintf("read %d of %d sent; held %d, queued %d, sent %d, leader took %d", read, rep.sent, held, queued, sent, got)
		if read < rep.sent || held != 0 || queued != 0 {
			return false, nil
		}
		if !o.killLeader {
			return got >= sent, nil
		}
		// What the readers sent went partly to the killed leader, and
		// what it had not written to the new one again: done once the new
		// leader has taken nothing more for a while.
		if got != lastGot {
			lastGot, gotSince = got, time.Now()
		}
		return time.Since(gotSince) >= 10*time.Second, nil
	}); err != nil {
		logf("%v (%s); taking the figures as they are", err, state)
		rep.notes = append(rep.notes, "not every flow was taken before the timeout: "+state)
	}
	rep.flowsRead, _ = h.readFlows()
	cpu1, err := h.cpus()
	if err != nil {
		return err
	}
	rep.leaderCPU = cpu1[0] - cpu0[0]
	if recs, err := h.leader.Counter(replicas.MetricLeaderAccepted); err == nil {
		rep.leaderRecords = recs + rep.killedLeaderRecords - leaderRecords0
	}
	rep.window = time.Since(flowStart)
	rep.dropped = h.dropped()

	// Proposals: every workload with flows has both of its directions'.
	logf("waiting for the proposals of every workload with flows")
	if err := h.waitProposals(ctx); err != nil {
		rep.notes = append(rep.notes, err.Error())
	}
	// Counts: every edge's evidence against what was sent.
	logf("proposals: %d of %d, the last %s after its workload's first flow; comparing every edge's counts",
		rep.proposalsWanted-rep.proposalsMissing, rep.proposalsWanted, rep.proposalsAfter.Round(time.Second))
	if err := h.compareCounts(ctx); err != nil {
		rep.notes = append(rep.notes, err.Error())
	}
	rep.violations = h.violationCounts()
	if err := h.comparePolicyViolations(ctx); err != nil {
		rep.notes = append(rep.notes, err.Error())
	}
	api1, err := h.apiMetrics(ctx)
	if err != nil {
		return err
	}
	rep.apiWrites = diffSeries(api1.writes, api0.writes)
	rep.watchEvents = diffSeries(api1.watchEvents, apiSteady.watchEvents)
	rep.apiWindow, rep.watchWindow = time.Since(start), time.Since(steady)
	if w, err := h.leader.Series(replicas.MetricWrites); err == nil {
		rep.writerWrites = w
	}
	h.writes.Range(func(k, v any) bool {
		if rep.objectBytes == nil {
			rep.objectBytes = map[string]int64{}
		}
		rep.objectBytes[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	for _, p := range h.all {
		rss, err := p.PeakRSS()
		if err != nil {
			continue // a killed one
		}
		rep.rss = append(rep.rss, processRSS{p.Name, rss})
	}
	return nil
}

// cpus is the leader's CPU time, then each live reader's.
func (h *harness) cpus() ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range append([]*replicas.Process{h.leader}, h.liveReaders()...) {
		c, err := p.CPU()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// droppedMetrics are where a record can be dropped on its way from a
// reader to the writer, in the live replicas: the collector's exporter
// helpers (a send that failed, a full queue: the leader exporter's own
// after its retries; the OTLP exporter inside it, which it retries, at
// every failed try), the leader receiver (duplicates, malformed) and the
// Hubble receiver.
var droppedMetrics = []string{"otelcol_exporter_send_failed_log_records", "otelcol_exporter_enqueue_failed_log_records",
	replicas.MetricLeaderDropped, flowsource.MetricFlowsDropped}

// dropped is what the live replicas dropped, by series (metric and labels,
// the process's own left out); a killed replica's is not known.
func (h *harness) dropped() map[string]int64 {
	out := map[string]int64{}
	for _, p := range h.liveAll() {
		for _, name := range droppedMetrics {
			series, err := p.Series(name)
			if err != nil {
				continue
			}
			for s, v := range series {
				if v != 0 {
					out[seriesWithout(s, "service_instance_id")] += int64(v)
				}
			}
		}
	}
	return out
}

// seriesWithout is series without label's pair.
func seriesWithout(series, label string) string {
	i := strings.Index(series, label+`="`)
	if i < 0 {
		return series
	}
	j := strings.IndexByte(series[i+len(label)+2:], '"')
	if j < 0 {
		return series
	}
	return strings.Replace(series[:i]+series[i+len(label)+2+j+1:], "{,", "{", 1)
}

// readFlows is what the readers accepted or dropped, the killed ones' last
// reading included.
func (h *harness) readFlows() (int64, error) {
	n, err := replicas.Sum(h.liveReaders(), flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped)
	return n + h.rep.killedRead, err
}

// metricQueueSize is the collector's gauge of the batches in an exporter's
// sending queue: the leader exporter's, to the leader.
const metricQueueSize = "otelcol_exporter_queue_size"

// replica is the configuration of the replica whose pod has the address ip,
// its telemetry on metrics: every replica the same, as the chart runs them,
// each ready to read its share of the nodes and to take the others' records
// while it leads. The leader's membership Lease then publishes how far it
// took each node's records, from which the next reader of a killed reader's
// node counts.
func (h *harness) replica(ip, metrics string) replicas.Replica {
	return replicas.Replica{
		Leader: replicas.Leader{Lease: h.lease, Namespace: namespace, Listen: ip + ":" + h.leaderPort,
			ServerCert: h.server.CertFile, ServerKey: h.server.KeyFile, ClientCA: h.ca.CertFile, Writer: h.writer, Metrics: metrics,
			Sink: h.sink.Addr},
		Reader: replicas.Reader{Peer: h.cluster.PeerAddr, PeerServerName: dataplanetest.PeerServerName, CAFile: h.ca.CertFile,
			NodeCert: h.cluster.Client.CertFile, NodeKey: h.cluster.Client.KeyFile, Backfill: time.Hour,
			LeaderPort: h.leaderPort, ClientCert: h.client.CertFile, ClientKey: h.client.KeyFile,
			Aggregation: h.opts.aggregation},
	}
}

func (h *harness) startReader(ctx context.Context, i int) error {
	pod := fmt.Sprintf("scaletest-reader-%d", i+1)
	if err := replicas.RunningPod(ctx, h.env.Client, namespace, pod, replicas.ReaderIP(i)); err != nil {
		return err
	}
	metrics, err := replicas.FreeAddr()
	if err != nil {
		return err
	}
	config, err := h.launcher.WriteConfig(pod, h.replica(replicas.ReaderIP(i), metrics).YAML())
	if err != nil {
		return err
	}
	p, err := h.launcher.StartAs(pod, namespace, config, metrics)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.all = append(h.all, p)
	h.readers = append(h.readers, p)
	h.mu.Unlock()
	return nil
}

func exited(p *replicas.Process) bool {
	select {
	case <-p.Exited:
		return true
	default:
		return false
	}
}

func (h *harness) liveReaders() []*replicas.Process {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*replicas.Process
	for _, p := range h.readers {
		if !exited(p) {
			out = append(out, p)
		}
	}
	return out
}

func (h *harness) liveAll() []*replicas.Process {
	return append([]*replicas.Process{h.leader}, h.liveReaders()...)
}

// waitAllRead waits until the readers' gauges of the nodes they read add up
// to every node of the cluster, and every node has had a request.
func (h *harness) waitAllRead(ctx context.Context, readers []*replicas.Process, wait time.Duration) error {
	var state string
	err := replicas.Poll(ctx, "every node to be read", wait, append([]*replicas.Process{h.leader}, readers...), func() (bool, error) {
		n, err := replicas.Sum(readers, replicas.MetricNodes)
		if err != nil {
			return false, err
		}
		state = fmt.Sprintf("the readers read %d of %d nodes", n, h.opts.nodes)
		return n == int64(h.opts.nodes), nil
	})
	if err != nil {
		return fmt.Errorf("%w (%s)", err, state)
	}
	return nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// faults are the faults asked for, in order.
func (h *harness) faults() []func(context.Context) error {
	var out []func(context.Context) error
	if h.opts.addReader {
		out = append(out, h.addReader)
	}
	if h.opts.killReader {
		out = append(out, h.killReader)
	}
	if h.opts.replace > 0 {
		out = append(out, h.replaceNodes)
	}
	if h.opts.killLeader {
		out = append(out, h.killLeader)
	}
	return out
}

// addReader starts one more reader, as a scale-up does: its share of the
// nodes moves to it by graceful hand-offs (each released at its final
// checkpoint). It measures until every node is read again.
func (h *harness) addReader(ctx context.Context) error {
	h.mu.Lock()
	i := len(h.readers)
	h.mu.Unlock()
	logf("starting one more reader")
	start := time.Now()
	if err := h.startReader(ctx, i); err != nil {
		return err
	}
	h.mu.Lock()
	joined := h.readers[i]
	h.mu.Unlock()
	// The others read every node until they see it join: the move is done
	// once it reads its share and every node is read.
	var state string
	live := h.liveReaders()
	err := replicas.Poll(ctx, "the new reader's share to move to it", 5*time.Minute, append([]*replicas.Process{h.leader}, live...), func() (bool, error) {
		own, _ := joined.Counter(replicas.MetricNodes) // 0 until it serves its metrics
		n, err := replicas.Sum(live, replicas.MetricNodes)
		if err != nil {
			return false, err
		}
		state = fmt.Sprintf("the new reader reads %d nodes, the readers %d of %d", own, n, h.opts.nodes)
		return own > 0 && n == int64(h.opts.nodes), nil
	})
	if err != nil {
		return fmt.Errorf("after a reader joined: %w (%s)", err, state)
	}
	logf("%s, %s after it started", state, time.Since(start).Round(time.Millisecond))
	return nil
}

// killReader SIGKILLs the first reader and measures until the others read
// every node again.
func (h *harness) killReader(ctx context.Context) error {
	live := h.liveReaders()
	if len(live) < 2 {
		return errors.New("-kill-reader needs at least 2 readers")
	}
	victim, rest := live[0], live[1:]
	held, _ := victim.Counter(replicas.MetricNodes)
	read, _ := replicas.Sum([]*replicas.Process{victim}, flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped)
	logf("SIGKILL %s, which reads %d nodes", victim.Name, held)
	start := time.Now()
	victim.Kill()
	h.rep.killedRead += read
	if err := h.waitAllRead(ctx, rest, 5*time.Minute); err != nil {
		return fmt.Errorf("after %s was killed: %w", victim.Name, err)
	}
	h.rep.readerMoved = time.Since(start)
	h.rep.readerNodes = held
	logf("its %d nodes read again after %s", held, h.rep.readerMoved.Round(time.Millisecond))
	return nil
}

// killLeader SIGKILLs the leader and starts it again at once, as the
// kubelet restarts the pod's container, and measures until a replica leads
// again: the restarted one, or a reader that took the Lease first, which
// then is the leader of the figures and the restarted one a reader.
func (h *harness) killLeader(ctx context.Context) error {
	logf("SIGKILL the leader")
	cpu, _ := h.leader.CPU()
	// Read just before the kill: what it takes in between is missed.
	took, _ := h.leader.Counter(replicas.MetricLeaderAccepted)
	start := time.Now()
	h.leader.Kill()
	h.rep.killedLeaderCPU += cpu
	h.rep.killedLeaderRecords += took
	p, err := h.launcher.StartAs("scaletest-leader", namespace, h.leaderCfg, h.leader.Metrics)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.leader = p
	h.all = append(h.all, p)
	h.mu.Unlock()
	var leader *replicas.Process
	if err := replicas.Poll(ctx, "a new leader", 5*time.Minute, h.liveAll(), func() (bool, error) {
		// Only the leader has begun a term: the readers never led, and
		// the restarted process is new.
		for _, c := range h.liveAll() {
			if n, err := c.Counter(replicas.MetricTerms); err == nil && n >= 1 {
				leader = c
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	h.rep.newLeader = time.Since(start)
	if leader != p {
		h.mu.Lock()
		for i, r := range h.readers {
			if r == leader {
				h.readers[i] = p
			}
		}
		h.leader = leader
		h.mu.Unlock()
		// The figures of the leader's CPU and records came from the
		// process that led first; a reader's own reading is in its CPU.
		h.rep.leaderMoved = true
		h.rep.notes = append(h.rep.notes, leader.Name+" took the leader Lease while the leader restarted, and led from then on")
	}
	logf("%s leads after %s", leader.Name, h.rep.newLeader.Round(time.Millisecond))
	return nil
}

// replaceNodes replaces the share of nodes asked for: each is deleted and a
// node of a new name on a new address takes its pods' flows.
func (h *harness) replaceNodes(ctx context.Context) error {
	n := max(1, int(float64(h.opts.nodes)*h.opts.replace))
	logf("replacing %d nodes", n)
	start := time.Now()
	for k := range n {
		i := (k * h.opts.nodes) / n
		old := h.nodeName(i)
		name := fmt.Sprintf("%s-r%d", nodeName(i), time.Now().UnixNano()%100000)
		h.mu.Lock()
		h.hosts[name] = nodeHost(h.opts.nodes + i)
		h.mu.Unlock()
		if _, err := h.cluster.AddNode(name); err != nil {
			return err
		}
		// The node's connections go to the new node from here on: named
		// before it existed, they went nowhere and counted as sent.
		h.replacing.Lock()
		h.mu.Lock()
		h.names[i] = name
		h.mu.Unlock()
		h.cluster.DeleteNode(old)
		h.replacing.Unlock()
	}
	if err := h.waitAllRead(ctx, h.liveReaders(), 5*time.Minute); err != nil {
		return fmt.Errorf("after replacing nodes: %w", err)
	}
	h.rep.replaced, h.rep.replacedRead = n, time.Since(start)
	logf("the %d new nodes read after %s", n, h.rep.replacedRead.Round(time.Millisecond))
	return nil
}

// watchWrites sums the size of each Lease and ConfigMap of the namespace
// that the API server stores: the membership and checkpoints that the
// replicas write.
func (h *harness) watchWrites(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	add := func(kind string, obj runtime.Object) {
		b, err := json.Marshal(obj)
		if err != nil {
			return
		}
		v, _ := h.writes.LoadOrStore(kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(int64(len(b)))
	}
	leases, err := h.cs.CoordinationV1().Leases(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, err
	}
	cms, err := h.cs.CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		leases.Stop()
		return nil, err
	}
	follow := func(w watch.Interface) {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			switch o := ev.Object.(type) {
			case *coordinationv1.Lease:
				add("Lease", o)
			case *corev1.ConfigMap:
				add("ConfigMap", o)
			}
		}
	}
	go follow(leases)
	go follow(cms)
	return func() { cancel(); leases.Stop(); cms.Stop() }, nil
}

// apiFigures are the API server's own counters.
type apiFigures struct {
	writes, watchEvents map[string]float64
}

// apiMetrics reads the API server's /metrics: its requests that write, by
// resource and verb, and the watch events it sent, by kind.
func (h *harness) apiMetrics(ctx context.Context) (apiFigures, error) {
	b, err := h.cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiFigures{}, fmt.Errorf("the API server's metrics: %w", err)
	}
	f := apiFigures{writes: map[string]float64{}, watchEvents: map[string]float64{}}
	err = replicas.EachSample(bytes.NewReader(b), "apiserver_", func(series string, v float64) {
		switch {
		case strings.HasPrefix(series, "apiserver_request_total{"):
			verb, res := label(series, "verb"), label(series, "resource")
			if slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE", "APPLY"}, verb) {
				f.writes[res+" "+verb] += v
			}
		case strings.HasPrefix(series, "apiserver_watch_events_total{"):
			f.watchEvents[label(series, "resource")+"."+label(series, "group")] += v
		}
	})
	return f, err
}

// label is the value of a label of a series.
func label(series, name string) string {
	_, rest, ok := strings.Cut(series, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func diffSeries(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// proposalNames are the proposals that workload w's flows make: its egress
// proposal when it has a server, its ingress proposal when it has a client
// and no policy governs its ingress (the flows into it are then violations,
// not learned edges).
func (h *harness) proposalNames() map[string]int {
	wls := h.traffic.workloads
	out := map[string]int{}
	for _, e := range h.traffic.edges {
		if e.conns.Load() == 0 {
			continue
		}
		src, dst := wls[e.src], wls[e.dst]
		out[src.Namespace+"/"+proposalName(src, v1alpha1.DirectionEgress)] = e.src
		if !h.monitored[e.dst] {
			out[dst.Namespace+"/"+proposalName(dst, v1alpha1.DirectionIngress)] = e.dst
		}
	}
	return out
}

// proposalName is the proposal of the workload and direction. A CronJob's
// pods belong to its Job, which the enforcer attributes to the CronJob.
func proposalName(w fakecluster.Workload, d v1alpha1.Direction) string {
	return k8swriterexporter.ProposalName(workload.Ref{Namespace: w.Namespace, Kind: v1alpha1.WorkloadKind(w.Kind), Name: w.Name}, d)
}

// waitProposals waits until every workload with flows has its proposals,
// and notes when each appeared against the workload's first flow.
func (h *harness) waitProposals(ctx context.Context) error {
	want := h.proposalNames()
	seen := map[string]time.Time{}
	logged := time.Now()
	// The figure is the proposals' creation times, not when a list saw
	// them: a list a second is enough, and loads the API server that the
	// writer shares less.
	err := replicas.Poll(ctx, "every workload's proposals", h.opts.timeout, h.liveAll(), replicas.AtMostEvery(time.Second, func() (bool, error) {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("WorkloadNetworkPolicyProposalList"))
		if err := h.env.Client.List(ctx, &list); err != nil {
			return false, err
		}
		now := time.Now()
		for _, p := range list.Items {
			key := p.Namespace + "/" + p.Name
			if _, ok := seen[key]; !ok {
				// The creation time is the server's, to the second.
				seen[key] = p.CreationTimestamp.Time
				if seen[key].IsZero() {
					seen[key] = now
				}
			}
		}
		missing := 0
		for k := range want {
			if _, ok := seen[k]; !ok {
				missing++
			}
		}
		if missing != h.rep.proposalsMissing && time.Since(logged) > 15*time.Second {
			logf("%d of %d proposals of the workloads with flows exist", len(want)-missing, len(want))
			logged = time.Now()
		}
		h.rep.proposalsMissing = missing
		return missing == 0, nil
	}))
	h.rep.proposalsWanted = len(want)
	var worst time.Duration
	for k, w := range want {
		at, ok := seen[k]
		if !ok {
			continue
		}
		first := time.Unix(0, h.traffic.firstFlow[w].Load())
		worst = max(worst, at.Sub(first))
	}
	h.rep.proposalsAfter = worst
	if err != nil {
		return fmt.Errorf("%d of %d proposals missing: %w", h.rep.proposalsMissing, len(want), err)
	}
	return nil
}
