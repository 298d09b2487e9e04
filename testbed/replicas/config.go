package replicas

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// LeaderServerName is the name in the leader receiver's certificate,
	// which the readers check, as the chart's Service name.
	LeaderServerName = "network-enforcer-leader.network-enforcer.svc"
	// LeaderIP is the leader's pod IP, where its receiver listens; the
	// readers' pods are ReaderIP(i).
	LeaderIP = "127.0.0.2"
	// Interval is the leader exporter's aggregation interval (its default,
	// written for the reader to see).
	Interval = time.Second
	// StatusSyncInterval is the violation processor's status sync interval
	// (its default, written for the reader to see).
	StatusSyncInterval = 30 * time.Second
)

// ReaderIP is the pod IP of the i-th reader (from 0): 127.0.0.3 and on.
func ReaderIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+3) }

// Metric names read from the replicas.
const (
	MetricMembers        = "network_enforcer_members"
	MetricTerms          = "network_enforcer_leader_terms"
	MetricEdgesHeld      = "network_enforcer_leader_exporter_edges_held"
	MetricRecordsSent    = "network_enforcer_leader_exporter_records_sent"
	MetricLeaderAccepted = "network_enforcer_leader_receiver_records_accepted"
	MetricLeaderDropped  = "network_enforcer_leader_receiver_records_dropped"
	// MetricNodes is the gauge of the nodes whose Hubble server a replica
	// reads now.
	MetricNodes = "network_enforcer_receiver_nodes"
	// MetricWrites counts the writer's API writes, by kind and verb.
	MetricWrites = "network_enforcer_writer_api_writes"
)

// Telemetry is the service::telemetry section that exposes the collector's
// own metrics on addr, with the log quiet.
func Telemetry(addr string) string {
	host, port, _ := strings.Cut(addr, ":")
	return fmt.Sprintf(`  telemetry:
    logs:
      level: warn
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %s
                port: %s`, host, port)
}

// Leader is the leading replica's configuration: the leader receiver into
// the writer and the violation processor, its events to an OTLP sink (or to
// nop). No flow source: it is not a member and reads no node, so its
// membership publishes nothing (see Replica).
type Leader struct {
	Lease, Namespace string
	// Listen is the receiver's host:port; ServerCert and ServerKey its
	// certificate (for LeaderServerName), ClientCA the readers' CA.
	Listen, ServerCert, ServerKey, ClientCA string
	// Sink is the OTLP/gRPC address of the violation events; empty: nop.
	Sink string
	// Writer is YAML under the k8swriter exporter (such as write_qps),
	// indented by four spaces; empty: its defaults.
	Writer string
	// Metrics is where its telemetry is served.
	Metrics string
}

// Reader is a reading replica's configuration: the hubble receiver in nodes
// mode, learning, and the leader exporter; a standby of the same Lease.
type Reader struct {
	Lease, Namespace string
	// Peer is the Peer service's host:port, PeerServerName the name its
	// certificate has; CAFile the CA of every certificate; NodeCert and
	// NodeKey the client certificate that the Hubble servers accept.
	Peer, PeerServerName, CAFile, NodeCert, NodeKey string
	// Backfill is how far back a node is read the first time.
	Backfill time.Duration
	// LeaderPort is the leader receiver's port; ClientCert and ClientKey the
	// certificate that the leader accepts.
	LeaderPort, ClientCert, ClientKey string
	// Metrics is where its telemetry is served.
	Metrics string
	// Aggregation is the leader exporter's aggregation interval; zero:
	// Interval.
	Aggregation time.Duration
}

// RunningPod makes the Pod that names a replica's address, as the kubelet
// reports it: the readers find the leader's address there.
func RunningPod(ctx context.Context, c client.Client, namespace, name, ip string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "enforcer", Image: "network-enforcer"}}},
	}
	if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
		return err
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	return c.Status().Update(ctx, pod)
}

// Replica is a replica as the chart runs every one of them: it reads its
// share of the nodes and sends what it learned to the leader (Reader), and
// it takes the readers' records and writes them while it leads (Leader). Its
// membership Lease then publishes, while it leads, how far it took each
// node's records: the next reader of a node whose reader was killed counts
// from there. Reader.Metrics is ignored: Leader.Metrics serves both.
type Replica struct {
	Leader Leader
	Reader Reader
}

// YAML renders the configuration.
func (c Leader) YAML() string {
	return render(c.Lease, c.Namespace, c.Metrics, c.sections())
}

// YAML renders the configuration.
func (c Reader) YAML() string {
	return render(c.Lease, c.Namespace, c.Metrics, c.sections())
}

// YAML renders the configuration.
func (c Replica) YAML() string {
	l, r := c.Leader.sections(), c.Reader.sections()
	both := sections{
		receivers:  r.receivers + l.receivers,
		processors: "  memory_limiter:" + memoryLimiter + "\n  learning: {}\n  violation:" + violation,
		connectors: l.connectors,
		exporters:  r.exporters + l.exporters,
		pipelines:  r.pipelines + l.pipelines,
	}
	return render(c.Leader.Lease, c.Leader.Namespace, c.Leader.Metrics, both)
}

// sections are the parts of a configuration under receivers, processors,
// connectors, exporters and service::pipelines, each indented as it goes.
type sections struct {
	receivers, processors, connectors, exporters, pipelines string
}

// memoryLimiter and violation are the settings of those processors.
const (
	memoryLimiter = `
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20`
	violation = `
    status_sync_interval: ` + "30s"  // StatusSyncInterval
)

// sections are the leader's: the leader receiver, into the writer and the
// violation processor.
func (c Leader) sections() sections {
	events := "nop: {}"
	eventsExporter := "nop"
	if c.Sink != "" {
		events = fmt.Sprintf("otlp_grpc:\n    endpoint: %s\n    tls:\n      insecure: true", c.Sink)
		eventsExporter = "otlp_grpc"
	}
	writer := " {}"
	if c.Writer != "" {
		writer = "\n" + strings.TrimRight(c.Writer, "\n")
	}
	return sections{
		receivers: fmt.Sprintf(`
  leader:
    endpoint: %s
    tls:
      cert_file: %s
      key_file: %s
      client_ca_file: %s
    enforcer: enforcer`, c.Listen, c.ServerCert, c.ServerKey, c.ClientCA),
		processors: "  memory_limiter:" + memoryLimiter + "\n  violation:" + violation,
		connectors: "\n  forward/violations: {}",
		exporters:  fmt.Sprintf("\n  k8swriter:%s\n  %s", writer, events),
		pipelines: fmt.Sprintf(`
    logs/learned:
      receivers: [leader]
      processors: [memory_limiter]
      exporters: [k8swriter, forward/violations]
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [%s]`, eventsExporter),
	}
}

// sections are the reader's: the hubble receiver in nodes mode, learning,
// and the leader exporter.
func (c Reader) sections() sections {
	return sections{
		receivers: fmt.Sprintf(`
  hubble:
    nodes:
      endpoint: %[1]s
      tls:
        ca_file: %[2]s
        cert_file: %[3]s
        key_file: %[4]s
        server_name_override: %[5]s
    backfill:
      since: %[6]s
    enforcer: enforcer`, c.Peer, c.CAFile, c.NodeCert, c.NodeKey, c.PeerServerName, c.Backfill),
		processors: "  memory_limiter:" + memoryLimiter + "\n  learning: {}",
		exporters: fmt.Sprintf(`
  leader:
    port: %s
    tls:
      ca_file: %s
      cert_file: %s
      key_file: %s
      server_name_override: %s
    aggregation:
      interval: %s`, c.LeaderPort, c.CAFile, c.ClientCert, c.ClientKey, LeaderServerName, cmp.Or(c.Aggregation, Interval)),
		pipelines: `
    logs/flows:
      receivers: [hubble]
      processors: [memory_limiter, learning]
      exporters: [leader]`,
	}
}

// render renders a configuration of the sections: the leader elector and
// the enforcer extension on lease, the telemetry on metrics.
func render(lease, namespace, metrics string, s sections) string {
	connectors := ""
	if s.connectors != "" {
		connectors = "connectors:" + s.connectors + "\n"
	}
	return fmt.Sprintf(`extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %s
    lease_namespace: %s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:%s
processors:
%s
%sexporters:%s
service:
  extensions: [leader_elector, enforcer, policy_controller]
%s
  pipelines:%s
`, lease, namespace, s.receivers, s.processors, connectors, s.exporters, Telemetry(metrics), s.pipelines)
}
