package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// TestStandbyRefusesZtunnelRecords runs two replicas of the built binary with
// the ztunnel receiver gated by leadership: the standby answers OTLP requests
// with gRPC Unavailable and HTTP 503, which senders retry (and, through the
// Service, reach the leader); the leader takes them.
func TestStandbyRefusesZtunnelRecords(t *testing.T) {
	controlplanetest.Require(t)
	type replica struct {
		*process
		grpc, http, metrics string
	}
	start := func(name string) replica {
		r := replica{grpc: freeAddr(t), http: freeAddr(t), metrics: freeAddr(t)}
		host, port, _ := strings.Cut(r.metrics, ":")
		r.process = startBinary(t, writeConfig(t, name+".yaml", fmt.Sprintf(`
extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: ztunnel-pair
    lease_namespace: default
    lease_duration: 4s
    renew_deadline: 3s
    retry_period: 500ms
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:
  ztunnel:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
    leader_elector: leader_elector
processors:
  learning:
exporters:
  k8swriter:
service:
  extensions: [leader_elector, enforcer, policy_controller]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %s
                port: %s
  pipelines:
    logs:
      receivers: [ztunnel]
      processors: [learning]
      exporters: [k8swriter]
`, r.grpc, r.http, host, port)), "KUBECONFIG="+kubeconfig)
		return r
	}
	// Registered first, so it runs after the replicas are stopped: the leader
	// learns the record it takes.
	t.Cleanup(func() { resetGuarded(t) })
	a, b := start("a"), start("b")
	leading := func(r replica) bool {
		return terms(t, r.metrics) > 0
	}
	var leader, standby replica
	waitFor(t, "a leader", time.Minute, func() bool {
		switch {
		case leading(a):
			leader, standby = a, b
		case leading(b):
			leader, standby = b, a
		}
		return leader.process != nil
	})
	waitFor(t, "the standby's listeners", time.Minute, func() bool {
		return strings.Contains(standby.output.String(), "Everything is ready")
	})

	line := `{"level":"info","time":"2026-03-02T10:15:07.512347Z","scope":"access","message":"connection complete","src.addr":"10.0.8.11:43718","src.workload":"client-6d7e8f9a0-d3e4f","src.namespace":"guarded","src.identity":"spiffe://cluster.local/ns/guarded/sa/client","dst.addr":"10.0.8.10:15008","dst.hbone_addr":"10.0.8.10:8080","dst.workload":"api-5c6d7e8f9-a1b2c","dst.namespace":"guarded","dst.identity":"spiffe://cluster.local/ns/guarded/sa/api","direction":"inbound","duration":"3ms"}`
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(line)
	req := plogotlp.NewExportRequestFromLogs(ld)

	sendGRPC := func(addr string) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = plogotlp.NewGRPCClient(conn).Export(ctx, req)
		return err
	}
	sendHTTP := func(addr string) int {
		body, err := req.MarshalProto()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post("http://"+addr+"/v1/logs", "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if err := sendGRPC(standby.grpc); status.Code(err) != codes.Unavailable {
		t.Errorf("the standby answered gRPC with %v, want Unavailable", err)
	}
	if code := sendHTTP(standby.http); code != http.StatusServiceUnavailable {
		t.Errorf("the standby answered HTTP with %d, want 503", code)
	}
	if err := sendGRPC(leader.grpc); err != nil {
		t.Errorf("the leader refused gRPC: %v", err)
	}
	if code := sendHTTP(leader.http); code != http.StatusOK {
		t.Errorf("the leader answered HTTP with %d, want 200", code)
	}

	// The collector's standard receiver counts: the standby refused the record
	// once on each transport, the leader accepted it once on each.
	for _, transport := range []string{"grpc", "http"} {
		labels := []string{`receiver="ztunnel"`, fmt.Sprintf("transport=%q", transport)}
		if n := counterWith(t, standby.metrics, "otelcol_receiver_refused_log_records", labels...); n != 1 {
			t.Errorf("the standby's otelcol_receiver_refused_log_records on %s: %d, want 1", transport, n)
		}
		if n := counterWith(t, standby.metrics, "otelcol_receiver_accepted_log_records", labels...); n != 0 {
			t.Errorf("the standby's otelcol_receiver_accepted_log_records on %s: %d, want 0", transport, n)
		}
		if n := counterWith(t, leader.metrics, "otelcol_receiver_accepted_log_records", labels...); n != 1 {
			t.Errorf("the leader's otelcol_receiver_accepted_log_records on %s: %d, want 1", transport, n)
		}
	}
	if n := counterWith(t, standby.metrics, "network_enforcer_receiver_refused_standby"); n != 2 {
		t.Errorf("the standby's network_enforcer_receiver_refused_standby: %d, want 2", n)
	}
}
