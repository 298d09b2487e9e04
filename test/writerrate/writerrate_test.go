// Package writerrate measures the proposal writer against a real
// kube-apiserver: how long the first proposals of N workloads take to exist at
// the configured write rate. A benchmark, so that `go test ./...` builds it
// and runs nothing; run it with
//
//	go test ./test/writerrate/ -run '^$' -bench FirstProposals -benchtime 1x -args -workloads 1000 -write-qps 200
//
// It logs the time to every proposal, the writes a second the API server saw,
// and the model's figure (4 writes a workload at write_qps); it asserts no time.
package writerrate

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/testwait"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

var (
	workloads = flag.Int("workloads", 500, "workloads whose first proposals (ingress and egress) the writer makes")
	writeQPS  = flag.Float64("write-qps", k8swriterexporter.DefaultWriteQPS, "the writer's write_qps; write_burst is twice it")
)

const namespace = "writer-rate"

// BenchmarkFirstProposals: N Deployments, one learned edge of each to the
// next in each direction, given to the leader's writer at once; the figure
// is the time until all 2 x N proposals exist with their status written.
func BenchmarkFirstProposals(b *testing.B) {
	env := controlplanetest.Start(b, controlplanetest.Options{})
	if err := env.UseKubeconfig(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		b.Fatal(err)
	}
	n := *workloads
	refs := make([]workload.Ref, n)
	made := time.Now()
	for i := range refs {
		name := fmt.Sprintf("w%05d", i)
		refs[i] = workload.Ref{Namespace: namespace, Kind: v1alpha1.WorkloadKindDeployment, Name: name}
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}}}
		if err := env.Client.Create(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d Deployments created in %s", n, time.Since(made).Round(time.Millisecond))

	r := enforcerextensiontest.StartReplica(b, env.Config, "writer-rate", "writer-rate-0")
	f := k8swriterexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*k8swriterexporter.Config)
	cfg.WriteQPS, cfg.WriteBurst = *writeQPS, max(1, int(2**writeQPS))
	set := exportertest.NewNopSettings(f.Type())
	set.ID = component.NewID(f.Type())
	exp, err := f.CreateLogs(ctx, set, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Start(ctx, r.Host); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = exp.Shutdown(ctx) })
	r.Ready(b)
	testwait.For(b, "the replica to lead", 30*time.Second, r.Lease.IsLeader)
	// The enforcer's cache listed every Deployment as it started.

	for range b.N {
		measure(ctx, b, r.Enforcer.(proposals), exp, refs)
	}
}

// proposals are the enforcer extension's cached proposals.
type proposals interface {
	ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error)
}

// measure gives the writer the first edges of every workload and waits for
// their proposals.
func measure(ctx context.Context, b *testing.B, cache proposals, exp exporter.Logs, refs []workload.Ref) {
	b.Helper()
	n := len(refs)
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	now := time.Now()
	for i, ref := range refs {
		peer := refs[(i+1)%n]
		for _, e := range []learning.Edge{
			{Backend: v1alpha1.BackendKubernetes, Workload: ref, Direction: v1alpha1.DirectionIngress, Peer: peer, Protocol: "tcp", Port: 8080},
			{Backend: v1alpha1.BackendKubernetes, Workload: ref, Direction: v1alpha1.DirectionEgress, Peer: peer, Protocol: "tcp", Port: 8080},
		} {
			e.AppendTo(sl)
			learning.SetObserved(sl.LogRecords().At(sl.LogRecords().Len()-1), v1alpha1.PeerClassWorkload, 3, now)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if err := exp.ConsumeLogs(ctx, ld); err != nil {
		b.Fatal(err)
	}
	// Looked at every 2 s in the enforcer's cache, which the API server's
	// watch fills: a list from the API server of every proposal (megabytes
	// at thousands) would be load of its own on the server the writer uses.
	var half, all time.Duration
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for all == 0 {
		<-tick.C
		items, err := cache.ListProposals(namespace)
		if err != nil {
			b.Fatal(err)
		}
		written := 0
		for i := range items {
			if meta.IsStatusConditionTrue(items[i].Status.Conditions, v1alpha1.ConditionWritten) {
				written++
			}
		}
		if half == 0 && written >= n {
			half = time.Since(start)
		}
		if written == 2*n {
			all = time.Since(start)
		}
	}
	b.StopTimer()
	writes := 4 * n
	model := time.Duration(float64(max(0, writes-int(2**writeQPS))) / *writeQPS * float64(time.Second))
	b.Logf("%d workloads, write_qps %v: half the %d proposals in %s, all in %s, within 2 s (%.1f writes/s; the model, 4 writes a workload at write_qps after the burst: %s)",
		n, *writeQPS, 2*n, half.Round(time.Millisecond), all.Round(time.Millisecond),
		float64(writes)/all.Seconds(), model.Round(time.Second))
	b.ReportMetric(all.Seconds(), "s/all-proposals")
	b.ReportMetric(float64(writes)/all.Seconds(), "writes/s")
}
