package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// TestNodeAgentForwardsZtunnelFlowsToController runs the built binary twice: as
// the node agent, tailing a ztunnel container log in CRI format and forwarding
// the flow records over OTLP with mutual TLS; and as the controller, whose ztunnel
// receiver takes them and whose otlp exporter sends them to a real OTLP receiver.
func TestNodeAgentForwardsZtunnelFlowsToController(t *testing.T) {
	controlplanetest.Require(t)
	lines, err := dataplanetest.LoadZtunnel(repoFile(t, dataplanetest.ZtunnelFixture))
	if err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	dir := filepath.Join(logs, "istio-system_ztunnel-x7k2p_0b9e3c1a", "istio-proxy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(dataplanetest.CRI(lines, time.Now(), 300)), 0o600); err != nil {
		t.Fatal(err)
	}

	ca := certtest.NewCA(t, "network-enforcer-ca")
	server := ca.Server(t, "controller")
	client := ca.Client(t, "node-agent")
	sink := startOTLPSink(t)
	otlp := freeAddr(t)

	controller := writeConfig(t, "controller.yaml", fmt.Sprintf(`
receivers:
  ztunnel:
    protocols:
      grpc:
        endpoint: %[1]s
        tls:
          cert_file: %[2]s
          key_file: %[3]s
          client_ca_file: %[4]s
exporters:
  otlp_grpc:
    endpoint: %[5]s
    tls:
      insecure: true
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [ztunnel]
      exporters: [otlp_grpc]
`, otlp, server.CertFile, server.KeyFile, ca.CertFile, sink.Addr))

	agent := writeConfig(t, "agent.yaml", fmt.Sprintf(`
extensions:
  file_storage/ztunnel:
    directory: %[1]s
receivers:
  ztunnel:
    file:
      include: [%[2]s/istio-system_ztunnel-*/istio-proxy/*.log]
      start_at: beginning
      storage: file_storage/ztunnel
    join_window: 500ms
exporters:
  otlp_grpc:
    endpoint: %[3]s
    tls:
      ca_file: %[4]s
      cert_file: %[5]s
      key_file: %[6]s
service:
  extensions: [file_storage/ztunnel]
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [ztunnel]
      exporters: [otlp_grpc]
`, t.TempDir(), logs, otlp, ca.CertFile, client.CertFile, client.KeyFile))

	c := startBinary(t, controller)
	a := startBinary(t, agent)

	// The fixture holds 5 allowed connections, 2 enforced denials and 2 dry-run
	// decisions, one of them joined with its access line (port 8080), one not.
	// Six allowed: one from outside the mesh, without an identity.
	want := map[string]int{"allowed": 6, "denied": 2, "dry_run_denied:8080": 1, "dry_run_denied:0": 1}
	var got map[string]int
	records := func() bool {
		got = map[string]int{}
		for _, lr := range sink.Records() {
			var r flow.Record
			r.ReadFrom(lr)
			key := string(r.Outcome)
			if r.Outcome == flow.OutcomeDryRunDenied {
				key = fmt.Sprintf("%s:%d", key, r.Destination.Port)
			}
			got[key]++
			if r.Provider != flow.ProviderIstio || (r.Destination.Port == 0 && r.Outcome == flow.OutcomeAllowed) {
				t.Fatalf("record %+v", r)
			}
		}
		for _, p := range []*process{c, a} {
			select {
			case <-p.exited:
				t.Fatalf("a collector exited: %v", p.err)
			default:
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
	if !testwait.Try(t, "the records", time.Minute, records) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

func writeConfig(t *testing.T, name, config string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
