package integration

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// outage is how long the API server is out of reach.
const outage = time.Minute

// TestAPIServerOutage cuts the pipeline off from the API server for a minute
// while ztunnel lines keep arriving: nothing crashes, the learning is kept in
// memory, and the proposals are written once the API server is back.
func TestAPIServerOutage(t *testing.T) {
	controlplanetest.Require(t)
	fresh(t)
	target, err := env.APIServerAddr()
	must(t, err)
	proxy, err := controlplanetest.StartProxy(target)
	must(t, err)
	t.Cleanup(proxy.Cut)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, env.WriteKubeconfigVia(kubeconfig, proxy.Addr))
	t.Setenv("KUBECONFIG", kubeconfig)

	p := startPipeline(t, sources{ztunnel: true})
	waitUntil(t, "leadership", 30*time.Second, p.Enforcer.IsLeader)
	lines, err := dataplanetest.LoadZtunnel(repoFile(t, dataplanetest.ZtunnelFixture))
	must(t, err)

	proxy.Cut()
	start := time.Now()
	for time.Since(start) < outage {
		sendLines(t, p.ztunnelAddr, lines)
		// Time must pass: the outage lasts outage, and the node agent's lines
		// keep coming every 5s through it, as they would in a cluster.
		time.Sleep(5 * time.Second)
	}
	// The writer tried, and failed, during the outage: its rounds ran.
	waitUntil(t, "a failed write round during the outage", time.Minute, func() bool {
		return p.Counter(enforcerextension.MetricReconciles, map[string]string{"controller": "proposal-writer", "result": "error"}) > 0
	})
	if got := istioProposals(t); len(got) != 0 {
		t.Fatalf("proposals written while the API server was out of reach: %v", got)
	}
	must(t, proxy.Restore())

	want := []string{"pay/statefulset-payments-ingress", "store/deployment-orders-ingress", "store/statefulset-db-ingress"}
	waitUntil(t, "the proposals after the outage", time.Minute, func() bool { return slices.Equal(istioProposals(t), want) })
	var orders v1alpha1.WorkloadNetworkPolicyProposal
	must(t, env.Client.Get(context.Background(), key("store", "deployment-orders-ingress"), &orders))
	var principals []string
	for _, r := range orders.Spec.Istio.Rules {
		principals = append(principals, r.From[0].Source.Principals...)
		if !slices.Equal(r.To[0].Operation.Ports, []string{"8080"}) {
			t.Errorf("ports %v", r.To[0].Operation.Ports)
		}
	}
	if want := []string{"cluster.local/ns/analytics/sa/reports", "cluster.local/ns/store/sa/web", "cluster.local/ns/web/sa/frontend"}; !slices.Equal(principals, want) {
		t.Errorf("principals %v, want %v", principals, want)
	}
}

// istioProposals lists the proposals of the istio backend, read directly.
func istioProposals(t *testing.T) []string {
	var list v1alpha1.WorkloadNetworkPolicyProposalList
	must(t, env.Client.List(context.Background(), &list))
	var out []string
	for _, p := range list.Items {
		if p.Spec.Backend == v1alpha1.BackendIstio {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// sendLines sends ztunnel lines over OTLP/gRPC, each as a record's body, as
// fluent-bit does.
func sendLines(t *testing.T, addr string, lines []string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer conn.Close()
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, l := range lines {
		lrs.AppendEmpty().Body().SetStr(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld)); err != nil {
		t.Fatalf("sending ztunnel lines: %v", err)
	}
}

// waitUntil waits for cond (testwait.For).
var waitUntil = testwait.For
