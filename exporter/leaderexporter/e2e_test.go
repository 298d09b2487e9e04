package leaderexporter

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/exporter/leaderexporter/internal/metadata"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/receiver/leaderreceiver"
)

// serviceName is the name in the leader's certificate, as the chart's
// Service's DNS name: the exporter reaches a pod IP and checks this name.
const serviceName = "network-enforcer-leader.network-enforcer.svc"

// leaderEnv is a leader receiver listening with mutual TLS on a replica whose
// leadership the test switches, and what it hands on.
type leaderEnv struct {
	ca      *certtest.CA
	port    int
	replica *enforcerextensiontest.Enforcer
	sink    *consumertest.LogsSink
	tel     *componenttest.Telemetry
}

func startLeaderReceiver(t *testing.T) *leaderEnv {
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return startLeaderReceiverOn(t, certtest.NewCA(t, "leader"), "127.0.0.1", p)
}

// startLeaderReceiverOn starts a leader receiver on host:port with a server
// certificate of ca.
func startLeaderReceiverOn(t *testing.T, ca *certtest.CA, host string, port int) *leaderEnv {
	t.Helper()
	server := ca.Server(t, "leader-receiver-"+host, serviceName)
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	env := &leaderEnv{ca: ca, port: port, replica: enforcerextensiontest.New(), sink: &consumertest.LogsSink{}, tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { _ = env.tel.Shutdown(context.Background()) })

	f := leaderreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*leaderreceiver.Config)
	cfg.NetAddr.Endpoint = addr
	srvTLS := configtls.NewDefaultServerConfig()
	srvTLS.CertFile, srvTLS.KeyFile, srvTLS.ClientCAFile = server.CertFile, server.KeyFile, ca.CertFile
	cfg.TLS = configoptional.Some(srvTLS)
	set := receivertest.NewNopSettings(f.Type())
	set.TelemetrySettings = env.tel.NewTelemetrySettings()
	r, err := f.CreateLogs(context.Background(), set, cfg, env.sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), env.replica.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return env
}

// startReader starts a leader exporter with interval on a reader replica
// that locates the leader on 127.0.0.1, with a client certificate of the
// leader's CA.
func startReader(t *testing.T, env *leaderEnv, interval time.Duration) (exporter.Logs, *componenttest.Telemetry) {
	t.Helper()
	e, tel, _ := startReaderOf(t, env, interval)
	return e, tel
}

// startReaderOf is startReader, which also returns the reader's replica, to
// move the leader.
func startReaderOf(t *testing.T, env *leaderEnv, interval time.Duration) (exporter.Logs, *componenttest.Telemetry, *enforcerextensiontest.Enforcer) {
	t.Helper()
	client := env.ca.Client(t, "reader-"+strconv.Itoa(int(interval.Milliseconds())))
	cfg := createDefaultConfig().(*Config)
	cfg.Port = env.port
	cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile = env.ca.CertFile, client.CertFile, client.KeyFile
	cfg.TLS.ServerName = serviceName
	cfg.Aggregation.Interval = interval
	cfg.RetryConfig.InitialInterval, cfg.RetryConfig.MaxInterval = 10*time.Millisecond, 50*time.Millisecond

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	e, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	reader := enforcerextensiontest.New()
	reader.SetLeaderAddress("127.0.0.1")
	if err := e.Start(context.Background(), reader.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	return e, tel, reader
}

// twoLeaders starts two leader receivers, the first leading, and a reader
// of the first whose exporter merges for interval; the test moves the lead
// to the second (at 127.0.0.2) itself.
func twoLeaders(t *testing.T, interval time.Duration) (first, second *leaderEnv, e exporter.Logs, tel *componenttest.Telemetry,
	reader *enforcerextensiontest.Enforcer) {
	t.Helper()
	first = startLeaderReceiver(t)
	second = startLeaderReceiverOn(t, first.ca, "127.0.0.2", first.port)
	first.replica.Lead()
	e, tel, reader = startReaderOf(t, first, interval)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return first, second, e, tel, reader
}

// TestReaderToLeaderOverMutualTLS: a standby refuses and the exporter tries
// again until the replica leads; a candidate arrives while the edges wait for
// the interval; the edges arrive merged; a candidate sent again is dropped as
// a duplicate.
func TestReaderToLeaderOverMutualTLS(t *testing.T) {
	env := startLeaderReceiver(t)
	e, readerTel := startReader(t, env, time.Hour) // the interval ends at the shutdown
	shutDown := false
	t.Cleanup(func() {
		if !shutDown {
			_ = e.Shutdown(context.Background())
		}
	})

	ld, sl := newScope()
	appendEdge(sl, 8080, 3, time.Second)
	appendCandidate(sl, 40000, time.Second)
	appendEdge(sl, 8080, 4, 2*time.Second)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}

	// The replica is a standby: it refuses, and the exporter keeps trying.
	waitFor(t, "the standby's refusal", func() bool {
		return counter(env.tel, "network_enforcer_leader_receiver_records_refused", "") >= 1
	})
	if n := env.sink.LogRecordCount(); n != 0 {
		t.Fatalf("a standby handed on %d records", n)
	}

	// It leads: the candidate arrives, the edges still wait.
	env.replica.Lead()
	waitFor(t, "the candidate", func() bool { return env.sink.LogRecordCount() >= 1 })
	got := records(env.sink.AllLogs()...)
	if len(got) != 1 || got[0].EventName() != learning.CandidateEventName {
		t.Fatalf("the leader has %d records, want the candidate alone", len(got))
	}

	// The same candidate again, as a reader that took the node over sends it.
	again, sl := newScope()
	appendCandidate(sl, 40000, time.Second)
	if err := e.ConsumeLogs(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the duplicate's drop", func() bool {
		return counter(env.tel, "network_enforcer_leader_receiver_records_dropped", "duplicate") == 1
	})
	if n := env.sink.LogRecordCount(); n != 1 {
		t.Fatalf("the leader has %d records after the duplicate, want 1", n)
	}

	// The shutdown ends the interval: the two edges arrive as one.
	shutDown = true
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got = records(env.sink.AllLogs()...)
	if len(got) != 2 {
		t.Fatalf("the leader has %d records after the reader's shutdown, want 2", len(got))
	}
	edge := got[1]
	if edge.EventName() != learning.EventName || portOf(edge) != 8080 || flowsOf(edge) != 7 {
		t.Fatalf("edge %s port %d flows %d, want the learned edge 8080 of 7 flows", edge.EventName(), portOf(edge), flowsOf(edge))
	}
	// 4 records in (3 and the resent candidate), 3 sent: the candidate, its
	// resending (which the leader answered, and dropped), the merged edge.
	if in, out := counter(readerTel, MetricRecordsReceived, ""), counter(readerTel, MetricRecordsSent, ""); in != 4 || out != 3 {
		t.Fatalf("exporter counters: %d received, %d sent; want 4 and 3", in, out)
	}
	if n := counter(env.tel, "network_enforcer_leader_receiver_records_accepted", ""); n != 2 {
		t.Fatalf("receiver accepted %d records, want 2", n)
	}
}

// TestTheExporterFollowsTheLeader: when the leader moves to another pod, the
// old one answers Unavailable and the exporter, retrying, connects to the new
// address and delivers there.
func TestTheExporterFollowsTheLeader(t *testing.T) {
	first, second, e, _, reader := twoLeaders(t, time.Hour)

	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first leader's candidate", func() bool { return first.sink.LogRecordCount() == 1 })

	// The first leader steps down; the reader still locates it.
	first.replica.Follow()
	ld, sl = newScope()
	appendCandidate(sl, 2, 0)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old leader's refusal", func() bool {
		return counter(first.tel, "network_enforcer_leader_receiver_records_refused", "") >= 1
	})
	// The second leads, and the reader's cache sees the new holder.
	second.replica.Lead()
	reader.SetLeaderAddress("127.0.0.2")
	// The new leader is sent the first candidate again, marked as taken
	// by the old one, and then the second.
	waitFor(t, "the candidates at the new leader", func() bool { return second.sink.LogRecordCount() == 2 })
	if n := first.sink.LogRecordCount(); n != 1 {
		t.Fatalf("the old leader has %d records, want its first one", n)
	}
	got := second.sink.AllLogs()
	if len(got) != 2 || !flowsource.WasTaken(got[0]) || flowsource.WasTaken(got[1]) {
		t.Fatalf("the new leader got %d batches; want the old leader's marked as taken, then the new one", len(got))
	}
}

// TestNoKnownLeaderIsRetried: while no leader is known a send fails with a
// retryable error, and the record goes once the leader is located.
func TestNoKnownLeaderIsRetried(t *testing.T) {
	env := startLeaderReceiver(t)
	env.replica.Lead()
	e, _, reader := startReaderOf(t, env, time.Hour)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	reader.SetLeaderAddress("")

	ld, sl := newScope()
	appendCandidate(sl, 1, 0)
	err := e.(*leaderExporter).sender.push(context.Background(), ld)
	if !errors.Is(err, errNoLeader) || consumererror.IsPermanent(err) {
		t.Fatalf("a send without a leader: %v; want the retryable %v", err, errNoLeader)
	}
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	reader.SetLeaderAddress("127.0.0.1")
	waitFor(t, "the candidate, once the leader is known", func() bool { return env.sink.LogRecordCount() == 1 })
}

// TestEdgesArriveAfterTheInterval: with a short interval the held edges go
// without a shutdown, merged; the batch's candidate goes at once, on its own.
func TestEdgesArriveAfterTheInterval(t *testing.T) {
	env := startLeaderReceiver(t)
	env.replica.Lead()
	e, _ := startReader(t, env, 50*time.Millisecond)
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })

	ld, sl := newScope()
	appendEdge(sl, 9090, 2, time.Second)
	appendObservation(sl, 9090, 1, time.Second)
	appendEdge(sl, 9090, 5, 3*time.Second)
	appendObservation(sl, 9090, 2, 2*time.Second)
	appendCandidate(sl, 40001, time.Second)
	if err := e.ConsumeLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the merged edge and observation", func() bool { return env.sink.LogRecordCount() >= 3 })
	byEvent := map[string][]plog.LogRecord{}
	for _, lr := range records(env.sink.AllLogs()...) {
		byEvent[lr.EventName()] = append(byEvent[lr.EventName()], lr)
	}
	edges, observations := byEvent[learning.EventName], byEvent[learning.ObservationEventName]
	if len(edges) != 1 || flowsOf(edges[0]) != 7 || len(observations) != 1 || flowsOf(observations[0]) != 3 ||
		len(byEvent[learning.CandidateEventName]) != 1 {
		t.Fatalf("the leader has %d edges, %d observations, %d candidates; want one each, of 7 and 3 flows",
			len(edges), len(observations), len(byEvent[learning.CandidateEventName]))
	}
}

// TestAClientWithoutACertificateIsRefused: the leader's listener requires a
// client certificate of its CA; the TLS handshake fails without one, and the
// same client with one is served.
func TestAClientWithoutACertificateIsRefused(t *testing.T) {
	env := startLeaderReceiver(t)
	env.replica.Lead()
	export := func(certs []tls.Certificate) error {
		conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(env.port)),
			grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
				RootCAs: env.ca.Pool(), ServerName: serviceName, Certificates: certs, MinVersion: tls.VersionTLS12,
			})))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ld, sl := newScope()
		appendCandidate(sl, uint32(len(certs)), 0)
		_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		return err
	}
	// TLS 1.3 tells the client after its handshake: the error is the
	// server's alert or the connection it closed, both Unavailable.
	if err := export(nil); status.Code(err) != codes.Unavailable {
		t.Fatalf("a client without a certificate: %v; want the handshake's refusal (Unavailable)", err)
	}
	if n := env.sink.LogRecordCount(); n != 0 {
		t.Fatalf("the leader took %d records from a client without a certificate", n)
	}
	if err := export([]tls.Certificate{env.ca.Client(t, "reader").TLS}); err != nil {
		t.Fatalf("the same client with a certificate: %v", err)
	}
	if n := env.sink.LogRecordCount(); n != 1 {
		t.Fatalf("the leader took %d records from a client with a certificate, want 1", n)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// counter returns the sum of a counter's points, those of the drop reason
// when reason is set; 0 when it was never incremented.
func counter(tel *componenttest.Telemetry, name, reason string) int64 {
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	var n int64
	for _, dp := range s.DataPoints {
		if r, _ := dp.Attributes.Value("reason"); reason == "" || r.AsString() == reason {
			n += dp.Value
		}
	}
	return n
}

// waitFor waits up to ten seconds for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, what, 10*time.Second, cond)
}
