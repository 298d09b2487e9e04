package reviewextension

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// workloadsPerNamespace is how the scale benchmarks spread their workloads.
const workloadsPerNamespace = 50

// scaleObjects writes ingress proposals for workloads [from, to) of the scale
// namespaces: each workload receives from the one before it and, one in ten,
// from an external address that protect mode would block.
func scaleObjects(ctx context.Context, c client.Client, from, to int) error {
	now := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := scaleObject(ctx, c, i, now); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for ns := from / workloadsPerNamespace; ns*workloadsPerNamespace < to; ns++ {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace(ns)}})); err != nil {
			return err
		}
	}
	for i := from; i < to; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func scaleNamespace(k int) string { return fmt.Sprintf("scale-%03d", k) }

func scaleObject(ctx context.Context, c client.Client, i int, now time.Time) error {
	ns := scaleNamespace(i / workloadsPerNamespace)
	name := fmt.Sprintf("w%05d", i)
	edges := []v1alpha1.ObservedEdge{edge(workloadPeer(ns, "Deployment", fmt.Sprintf("w%05d", max(i-1, 0))), 8080, int64(i), v1alpha1.VerdictAllowed, now)}
	if i%10 == 0 {
		edges = append(edges, edge(v1alpha1.ObservedPeer{Class: v1alpha1.PeerClassExternal, Address: fmt.Sprintf("198.51.100.%d/32", i%250)},
			443, 1, v1alpha1.VerdictWouldBlock, now))
	}
	p := &v1alpha1.WorkloadNetworkPolicyProposal{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployment-" + name + "-ingress"},
		Spec:       kubernetesSpec(v1alpha1.WorkloadKindDeployment, name, v1alpha1.DirectionIngress, 1),
	}
	if err := c.Create(ctx, p); err != nil {
		return err
	}
	p.Status.ObservedTraffic = traffic(edges...)
	return c.Status().Update(ctx, p)
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkBrowserGraph measures the cluster-wide page at 500 and at 5,000
// workloads in headless Chromium on the real control plane: the time to the
// page's DOMContentLoaded, to the graph drawn (from the navigation's start),
// the graph's fetch and its drawing, and one namespace's page beside it; and
// what the page adds to the enforcer's memory: the heap it keeps once the
// loads are done, and what one graph.json allocates. No figure is asserted.
//
//	make review-bench
func BenchmarkBrowserGraph(b *testing.B) {
	controlplanetest.Require(b)
	ctx := context.Background()
	made := 0
	for _, n := range []int{500, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			if err := scaleObjects(ctx, env.Client, made, n); err != nil {
				b.Fatal(err)
			}
			made = n
			e, h := startEnforcer(b, fmt.Sprintf("review-bench-%d", n))
			// The poll's own interval, so that the loop does not spin while it
			// waits for the cache.
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				if ps, _ := e.ListProposals(""); len(ps) >= n {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("the cache did not fill")
				}
			}
			tab := startBrowser(b)
			before := heapInUse()
			base := startReview(b, h, AuthModeAuto)

			// The server's part: one graph.json of the cluster.
			static, err := newStaticFiles()
			if err != nil {
				b.Fatal(err)
			}
			r, err := policycontrollerextension.Find[policycontrollerextension.Renderer](h, policycontrollerextension.DefaultReference())
			if err != nil {
				b.Fatal(err)
			}
			p, err := newPages(e, r, time.Second, false, DefaultAudience, static)
			if err != nil {
				b.Fatal(err)
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			t0 := time.Now()
			g, err := p.graph("")
			if err != nil {
				b.Fatal(err)
			}
			var size countingWriter
			_ = json.NewEncoder(&size).Encode(g)
			serverMs := float64(time.Since(t0).Microseconds()) / 1000
			runtime.ReadMemStats(&m1)

			var load, ready, fetch, render, jsHeap, nsReady float64
			b.ResetTimer()
			for range b.N {
				if err := chromedp.Do(tab, chromedp.Navigate(base+"/")); err != nil {
					b.Fatal(err)
				}
				tm, err := waitGraph(tab, 5*time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				load, ready, fetch, render, jsHeap = load+tm.DOMContentLoadedMs, ready+tm.ReadyMs, fetch+tm.FetchMs, render+tm.RenderMs, max(jsHeap, tm.JSHeapBytes)
				if err := chromedp.Do(tab, chromedp.Navigate(base+"/?namespace="+scaleNamespace(0))); err != nil {
					b.Fatal(err)
				}
				ns, err := waitGraph(tab, time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				nsReady += ns.ReadyMs
			}
			b.StopTimer()
			after := heapInUse()
			runs := float64(b.N)
			b.ReportMetric(float64(len(g.Nodes)), "nodes")
			b.ReportMetric(float64(len(g.Edges)), "edges")
			b.ReportMetric(load/runs, "dom_ms")
			b.ReportMetric(ready/runs, "graph_ready_ms")
			b.ReportMetric(fetch/runs, "fetch_ms")
			b.ReportMetric(render/runs, "render_ms")
			b.ReportMetric(nsReady/runs, "namespace_ready_ms")
			b.ReportMetric(serverMs, "server_graph_ms")
			b.ReportMetric(float64(size)/1e6, "graph_json_MB")
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/1e6, "alloc_per_graph_MB")
			b.ReportMetric((float64(after)-float64(before))/1e6, "enforcer_heap_added_MB")
			b.ReportMetric(jsHeap/1e6, "page_js_heap_MB")
			b.Logf("%d workloads: %d nodes, %d edges; DOMContentLoaded %.0f ms, graph drawn %.0f ms after navigation (fetch %.0f ms, draw %.0f ms); "+
				"namespace %s drawn %.0f ms after navigation; server builds graph.json (%.1f MB) in %.0f ms, allocating %.1f MB; "+
				"the enforcer's heap after the page's loads: %+.1f MB; the page's JS heap %.1f MB",
				n, len(g.Nodes), len(g.Edges), load/runs, ready/runs, fetch/runs, render/runs, scaleNamespace(0), nsReady/runs,
				float64(size)/1e6, serverMs, float64(m1.TotalAlloc-m0.TotalAlloc)/1e6, (float64(after)-float64(before))/1e6, jsHeap/1e6)
		})
	}
}

// countingWriter counts what is written to it.
type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
