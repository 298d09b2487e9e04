package replicas

import (
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
// nop). No flow source: it is not a member and reads no node.
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

// YAML renders the configuration.
func (c Leader) YAML() string {
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
	return fmt.Sprintf(`extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[1]s
    lease_namespace: %[2]s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
  leader:
    endpoint: %[3]s
    tls:
      cert_file: %[4]s
      key_file: %[5]s
      client_ca_file: %[6]s
    enforcer: enforcer
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  violation:
    status_sync_interval: 30s
connectors:
  forward/violations: {}
exporters:
  k8swriter:%[10]s
  %[7]s
service:
  extensions: [leader_elector, enforcer, policy_controller]
%[8]s
  pipelines:
    logs/learned:
      receivers: [leader]
      processors: [memory_limiter]
      exporters: [k8swriter, forward/violations]
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [%[9]s]
`, c.Lease, c.Namespace, c.Listen, c.ServerCert, c.ServerKey, c.ClientCA, events, Telemetry(c.Metrics), eventsExporter, writer)
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
}

// YAML renders the configuration.
func (c Reader) YAML() string {
	return fmt.Sprintf(`extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[1]s
    lease_namespace: %[2]s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
  hubble:
    nodes:
      endpoint: %[3]s
      tls:
        ca_file: %[4]s
        cert_file: %[5]s
        key_file: %[6]s
        server_name_override: %[7]s
    backfill:
      since: %[8]s
    enforcer: enforcer
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  learning: {}
exporters:
  leader:
    port: %[9]s
    tls:
      ca_file: %[4]s
      cert_file: %[10]s
      key_file: %[11]s
      server_name_override: %[12]s
    aggregation:
      interval: %[13]s
service:
  extensions: [leader_elector, enforcer, policy_controller]
%[14]s
  pipelines:
    logs/flows:
      receivers: [hubble]
      processors: [memory_limiter, learning]
      exporters: [leader]
`, c.Lease, c.Namespace, c.Peer, c.CAFile, c.NodeCert, c.NodeKey, c.PeerServerName,
		c.Backfill, c.LeaderPort, c.ClientCert, c.ClientKey, LeaderServerName, Interval, Telemetry(c.Metrics))
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
func (c Replica) YAML() string {
	l, r := c.Leader, c.Reader
	events := "nop: {}"
	eventsExporter := "nop"
	if l.Sink != "" {
		events = fmt.Sprintf("otlp_grpc:\n    endpoint: %s\n    tls:\n      insecure: true", l.Sink)
		eventsExporter = "otlp_grpc"
	}
	writer := " {}"
	if l.Writer != "" {
		writer = "\n" + strings.TrimRight(l.Writer, "\n")
	}
	return fmt.Sprintf(`extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[1]s
    lease_namespace: %[2]s
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
  hubble:
    nodes:
      endpoint: %[3]s
      tls:
        ca_file: %[4]s
        cert_file: %[5]s
        key_file: %[6]s
        server_name_override: %[7]s
    backfill:
      since: %[8]s
    enforcer: enforcer
  leader:
    endpoint: %[9]s
    tls:
      cert_file: %[10]s
      key_file: %[11]s
      client_ca_file: %[12]s
    enforcer: enforcer
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  learning: {}
  violation:
    status_sync_interval: 30s
connectors:
  forward/violations: {}
exporters:
  leader:
    port: %[13]s
    tls:
      ca_file: %[4]s
      cert_file: %[14]s
      key_file: %[15]s
      server_name_override: %[16]s
    aggregation:
      interval: %[17]s
  k8swriter:%[18]s
  %[19]s
service:
  extensions: [leader_elector, enforcer, policy_controller]
%[20]s
  pipelines:
    logs/flows:
      receivers: [hubble]
      processors: [memory_limiter, learning]
      exporters: [leader]
    logs/learned:
      receivers: [leader]
      processors: [memory_limiter]
      exporters: [k8swriter, forward/violations]
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [%[21]s]
`, l.Lease, l.Namespace, r.Peer, r.CAFile, r.NodeCert, r.NodeKey, r.PeerServerName, r.Backfill,
		l.Listen, l.ServerCert, l.ServerKey, l.ClientCA,
		r.LeaderPort, r.ClientCert, r.ClientKey, LeaderServerName, Interval, writer, events, Telemetry(l.Metrics), eventsExporter)
}
