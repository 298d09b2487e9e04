package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cilium/cilium/api/v1/observer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	pb "github.com/kubewarden/network-enforcer/internal/goldmanepb"
	"github.com/kubewarden/network-enforcer/internal/grpctest"
)

// The pods of the guarded namespace, which no fixture has: the journeys make
// their own flows between its workloads. Each runs as a service account of its
// workload's name.
var (
	api      = guardedPod("api", "api-5c6d7e8f9-a1b2c", "10.0.8.10", 4102)
	caller   = guardedPod("client", "client-6d7e8f9a0-d3e4f", "10.0.8.11", 4101)
	intruder = guardedPod("intruder", "intruder-7e8f9a0b1-g5h6i", "10.0.8.12", 4103)
)

func guardedPod(workload, pod, ip string, identity uint32) dataplanetest.End {
	return dataplanetest.End{Namespace: "guarded", Pod: pod, IP: ip, Workload: workload, Identity: identity, ServiceAccount: workload}
}

// principal is the pod's Istio principal.
func principal(p dataplanetest.End) string {
	return "cluster.local/ns/" + p.Namespace + "/sa/" + p.ServiceAccount
}

// plane is the data plane of a journey: the binary's flow receiver, and the
// flows the data plane reports.
type plane interface {
	provider() flow.Provider
	backend() v1alpha1.Backend
	// receiver is the receiver's configuration, as YAML under receivers:.
	receiver() string
	// allowed reports a connection that the data plane let through.
	allowed(t *testing.T, src, dst dataplanetest.End, port uint32)
	// violation reports a connection that a policy in mode does not allow,
	// as the data plane reports it in that mode.
	violation(t *testing.T, src, dst dataplanetest.End, port uint32, mode v1alpha1.PolicyMode)
	// forget drops the data plane's history, as a restarted collector would
	// find it once its buffer has moved on.
	forget()
}

// cilium is a Hubble Relay over TLS.
type cilium struct {
	relay   *dataplanetest.HubbleRelay
	addr    string
	caFile  string
	clients int
}

func newCilium(t *testing.T) plane {
	ca := certtest.NewCA(t, "cilium-ca")
	c := &cilium{relay: dataplanetest.NewHubbleRelay(nil), caFile: ca.CertFile}
	c.addr = grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "relay", "ui.hubble-relay.cilium.io"), nil),
		func(s *grpc.Server) { observer.RegisterObserverServer(s, c.relay) }).Addr
	return c
}

func (*cilium) provider() flow.Provider   { return flow.ProviderCilium }
func (*cilium) backend() v1alpha1.Backend { return v1alpha1.BackendKubernetes }
func (c *cilium) forget()                 { c.relay.SetResponses(nil) }

func (c *cilium) receiver() string {
	return fmt.Sprintf(`
  hubble:
    relay:
      endpoint: %s
      tls:
        ca_file: %s
        server_name_override: ui.hubble-relay.cilium.io
    leader_elector: leader_elector
`, c.addr, c.caFile)
}

func (c *cilium) allowed(_ *testing.T, src, dst dataplanetest.End, port uint32) {
	c.relay.Push(c.flow(src, dst, port, dataplanetest.ConnectionUnenforced)...)
}

// violation: in monitor mode no NetworkPolicy exists and Cilium forwards; in
// protect mode it drops for policy.
func (c *cilium) violation(_ *testing.T, src, dst dataplanetest.End, port uint32, mode v1alpha1.PolicyMode) {
	c.relay.Push(c.flow(src, dst, port, violationIn(mode))...)
}

// flow is what the agent emits for a new connection: traces, and the
// verdicts and drops of a denied one.
func (c *cilium) flow(src, dst dataplanetest.End, port uint32, kind dataplanetest.Connection) []*observer.GetFlowsResponse {
	c.clients++
	return dataplanetest.NewHubbleConnection(src, dst, uint32(40000+c.clients), port, kind)
}

// violationIn is what the data plane does with a connection that a policy in
// mode does not allow.
func violationIn(mode v1alpha1.PolicyMode) dataplanetest.Connection {
	if mode == v1alpha1.PolicyModeMonitor {
		return dataplanetest.ConnectionDryRunDenied
	}
	return dataplanetest.ConnectionDenied
}

// calico is a Goldmane over mutual TLS.
type calico struct {
	goldmane                  *dataplanetest.Goldmane
	addr                      string
	caFile, certFile, keyFile string
}

func newCalico(t *testing.T) plane {
	ca := certtest.NewCA(t, "calico-ca")
	c := &calico{goldmane: dataplanetest.NewGoldmane(nil), caFile: ca.CertFile}
	cert := ca.Client(t, "network-enforcer")
	c.certFile, c.keyFile = cert.CertFile, cert.KeyFile
	c.addr = grpctest.Start(t, certtest.ServerTLS(ca.Server(t, "goldmane", "goldmane.calico-system.svc"), ca),
		func(s *grpc.Server) { pb.RegisterFlowsServer(s, c.goldmane) }).Addr
	return c
}

func (*calico) provider() flow.Provider   { return flow.ProviderCalico }
func (*calico) backend() v1alpha1.Backend { return v1alpha1.BackendKubernetes }
func (c *calico) forget()                 { c.goldmane.SetFlows(nil) }

func (c *calico) receiver() string {
	return fmt.Sprintf(`
  goldmane:
    endpoint: %s
    tls:
      ca_file: %s
      cert_file: %s
      key_file: %s
      server_name_override: goldmane.calico-system.svc
    leader_elector: leader_elector
`, c.addr, c.caFile, c.certFile, c.keyFile)
}

func (c *calico) allowed(_ *testing.T, src, dst dataplanetest.End, port uint32) {
	c.goldmane.Push(dataplanetest.NewGoldmaneFlow(src, dst, port, dataplanetest.ConnectionUnenforced))
}

// violation: in monitor mode Calico allows (its profile does); in protect mode
// the destination's tier ends without an allow, and the trace names the
// NetworkPolicy whose tier ended.
func (c *calico) violation(_ *testing.T, src, dst dataplanetest.End, port uint32, mode v1alpha1.PolicyMode) {
	c.goldmane.Push(dataplanetest.NewGoldmaneFlow(src, dst, port, violationIn(mode)))
}

// istio is ztunnel's log lines, sent over OTLP with mutual TLS as fluent-bit
// sends them, to the binary's ztunnel receiver.
type istio struct {
	otlp                      string
	certFile, keyFile, caFile string
	serverCA                  string
	conn                      *grpc.ClientConn
	connections               int
}

func newIstio(t *testing.T) plane {
	ca := certtest.NewCA(t, "network-enforcer-ca")
	server := ca.Server(t, "controller")
	fluentBit := ca.Client(t, "fluent-bit")
	i := &istio{otlp: freeAddr(t), certFile: server.CertFile, keyFile: server.KeyFile, caFile: ca.CertFile, serverCA: ca.CertFile}
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(fluentBit.CertFile, fluentBit.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	i.conn, err = grpc.NewClient(i.otlp, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = i.conn.Close() })
	return i
}

func (*istio) provider() flow.Provider   { return flow.ProviderIstio }
func (*istio) backend() v1alpha1.Backend { return v1alpha1.BackendIstio }
func (*istio) forget()                   {}

func (i *istio) receiver() string {
	return fmt.Sprintf(`
  ztunnel:
    protocols:
      grpc:
        endpoint: %s
        tls:
          cert_file: %s
          key_file: %s
          client_ca_file: %s
    join_window: 500ms
`, i.otlp, i.certFile, i.keyFile, i.caFile)
}

func (i *istio) allowed(t *testing.T, src, dst dataplanetest.End, port uint32) {
	i.send(t, i.connection(src, dst, port, dataplanetest.ConnectionUnenforced)...)
}

// violation: in monitor mode ztunnel lets the connection through and logs the
// dry-run decision; in protect mode it rejects the connection and logs the
// decision too.
func (i *istio) violation(t *testing.T, src, dst dataplanetest.End, port uint32, mode v1alpha1.PolicyMode) {
	i.send(t, i.connection(src, dst, port, violationIn(mode))...)
}

// connection is the destination ztunnel's lines of a new connection.
func (i *istio) connection(src, dst dataplanetest.End, port uint32, kind dataplanetest.Connection) []string {
	i.connections++
	return dataplanetest.NewZtunnelConnection(src, dst, uint32(41000+i.connections), port, kind)
}

func (i *istio) send(t *testing.T, lines ...string) {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for _, l := range lines {
		sl.LogRecords().AppendEmpty().Body().SetStr(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plogotlp.NewGRPCClient(i.conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld)); err != nil {
		t.Fatalf("sending ztunnel lines: %v", err)
	}
}
