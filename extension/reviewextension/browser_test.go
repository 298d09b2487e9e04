package reviewextension

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// screenshots, set by `make screenshots`, writes the browser test's
// screenshots to docs/, where the README shows them; otherwise they go to the
// test's own folder, so that a test run leaves the tree as it was.
var screenshots = flag.Bool("screenshots", false, "write the review page's screenshots to docs/")

// chromium finds Debian's headless Chromium, which `make browser` installs.
func chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	controlplanetest.Need(tb, &controlplanetest.MissingError{What: "headless Chromium", Target: "browser",
		Detail: "no chromium on $PATH (Debian's chromium package)"})
	return ""
}

// startBrowser starts headless Chromium with a fresh profile and no
// background traffic, and returns a tab's context; it ends with the test.
func startBrowser(tb testing.TB) context.Context {
	tb.Helper()
	path := chromium(tb)
	profile, err := os.MkdirTemp("", "network-enforcer-chromium-") //nolint:usetesting // removed best effort below: a file Chromium writes as it exits must not fail the test.
	if err != nil {
		tb.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// A container's /dev/shm is often too small for Chromium's renderer.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("enable-precise-memory-info", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancelTab()
		cancelAlloc() // ends Chromium
		_ = os.RemoveAll(profile)
	})
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// logIn opens url, which sends the browser to the login form, and logs in
// with token; the page it lands on is url's.
func logIn(ctx context.Context, url, token string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("login")),
	)
}

// waitGraph waits until the page has drawn the graph, and returns its
// timings: as the page measured them, and from the navigation's start.
func waitGraph(ctx context.Context, timeout time.Duration) (timings, error) {
	// A poll that starts while a form's submission navigates loses its page
	// ("Cannot find context"): it starts again on the new one.
	deadline := time.Now().Add(timeout)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.dataset.graphReady === "1"`,
			chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return timings{}, err
		}
		// The poll's own interval, so that the loop does not spin while the new
		// page loads.
		time.Sleep(50 * time.Millisecond)
	}
	return chromedp.Run(ctx, chromedp.Evaluate[timings](`({
			fetchMs: window.reviewTimings.fetchMs, renderMs: window.reviewTimings.renderMs,
			readyMs: window.reviewTimings.readyMs, nodes: window.reviewTimings.nodes, edges: window.reviewTimings.edges,
			domContentLoadedMs: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
			jsHeapBytes: performance.memory ? performance.memory.usedJSHeapSize : 0
		})`))
}

type timings struct {
	FetchMs            float64 `json:"fetchMs"`
	RenderMs           float64 `json:"renderMs"`
	ReadyMs            float64 `json:"readyMs"`
	Nodes              int     `json:"nodes"`
	Edges              int     `json:"edges"`
	DOMContentLoadedMs float64 `json:"domContentLoadedMs"`
	JSHeapBytes        float64 `json:"jsHeapBytes"`
}

// screenshot writes the viewport as name.
func screenshot(tb testing.TB, ctx context.Context, name string) {
	tb.Helper()
	// Cytoscape paints on the next animation frame after the layout.
	if err := chromedp.Do(ctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		tb.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	if *screenshots {
		root, err := controlplanetest.RepoRoot()
		if err != nil {
			tb.Fatal(err)
		}
		dir = filepath.Join(root, "docs")
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("screenshot %s (%d bytes)", path, len(png))
}

// TestBrowser drives the page in headless Chromium against the real control
// plane: the login form, the graph's nodes, edges and states, and a
// proposal's would-block edges.
func TestBrowser(t *testing.T) {
	controlplanetest.Require(t)
	ctx := startBrowser(t)
	_, h := startEnforcer(t, "review-browser")
	base := startReview(t, h, AuthModeToken)
	token := serviceAccountToken(t, "review-reader", "", listPolicies)

	// The login form has its stylesheet before any token: the static files
	// need none.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatal(err)
	}
	if bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("header")).backgroundColor`)); err != nil || bg != "rgb(31, 41, 55)" {
		t.Errorf("the login form's header is %q (%v): its stylesheet did not load", bg, err)
	}
	if err := logIn(ctx, base+"/", token); err != nil {
		t.Fatal(err)
	}
	tm, err := waitGraph(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("graph of %d nodes and %d edges: fetched in %.0f ms, drawn in %.0f ms", tm.Nodes, tm.Edges, tm.FetchMs, tm.RenderMs)

	// What Cytoscape holds is what the reviewer sees: one edge per
	// connection, each end's state, and the colours: the state's where both
	// ends agree (or one end alone lists it), else the source's half in its
	// egress colour and the destination's half in its ingress colour.
	edges, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](`reviewGraph.edges().map(e => ({
		source: e.data("source"), target: e.data("target"), state: e.data("state"), egress: e.data("egress"), ingress: e.data("ingress"),
		color: e.style("line-color"), fill: e.style("line-fill"), stops: String(e.style("line-gradient-stop-colors")),
		arrow: e.style("target-arrow-color")}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(edges) != len(wantEdges) {
		t.Errorf("the graph draws %d edges, want %d, one per connection: %v", len(edges), len(wantEdges), edges)
	}
	have := map[string]map[string]string{}
	for _, e := range edges {
		have[e["source"]+" -> "+e["target"]] = e
	}
	rgb := func(s EdgeState) string {
		var r, g, b int
		_, _ = fmt.Sscanf(palette[s].Color, "#%02x%02x%02x", &r, &g, &b)
		return fmt.Sprintf("rgb(%d,%d,%d)", r, g, b)
	}
	flat := func(s string) string { return strings.ReplaceAll(s, " ", "") }
	for _, w := range wantEdges {
		key := w.source + " -> " + w.target
		e, ok := have[key]
		if !ok {
			t.Errorf("the graph has no edge %s; it has %v", key, have)
			continue
		}
		if e["state"] != string(w.state) || e["egress"] != string(w.egress) || e["ingress"] != string(w.ingress) {
			t.Errorf("edge %s: state %s, egress %q, ingress %q, want %s", key, e["state"], e["egress"], e["ingress"], w)
		}
		if w.egress != "" && w.ingress != "" && w.egress != w.ingress {
			if e["fill"] != "linear-gradient" || !strings.HasPrefix(flat(e["stops"]), rgb(w.egress)) || !strings.HasSuffix(flat(e["stops"]), rgb(w.ingress)) ||
				flat(e["arrow"]) != rgb(w.ingress) {
				t.Errorf("edge %s is drawn %s %s (arrow %s), want from %s to %s", key, e["fill"], e["stops"], e["arrow"], rgb(w.egress), rgb(w.ingress))
			}
			continue
		}
		if flat(e["color"]) != rgb(w.state) || e["fill"] != "solid" {
			t.Errorf("edge %s is drawn %s %s, want %s", key, e["fill"], e["color"], rgb(w.state))
		}
	}
	// The legend has the same colours, from the palette's stylesheet.
	legend, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll(".legend li")].map(
		li => [li.className, getComputedStyle(li, "::before").borderTopColor]))`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if flat(legend[string(s)]) != rgb(s) {
			t.Errorf("the legend's %s is %q, want %s", s, legend[string(s)], rgb(s))
		}
	}
	classes, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(reviewGraph.nodes().map(n => [n.id(), n.data("class")]))`))
	if err != nil {
		t.Fatal(err)
	}
	for id, class := range map[string]string{"x:External:203.0.113.7/32": "External", "x:APIServer:10.0.0.1/32": "APIServer",
		"x:Host:192.168.1.10/32": "Host", "w:pay/Deployment/api": "Workload", "ns:shop": "Group", "ns:pay": "Group", "outside": "Group"} {
		if classes[id] != class {
			t.Errorf("node %s: class %q, want %q", id, classes[id], class)
		}
	}
	screenshot(t, ctx, "review-graph.png")

	// A proposal's view lists what protect mode would block.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/proposals/shop/deployment-web-ingress")); err != nil {
		t.Fatal(err)
	}
	wouldBlock, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("would-block")))
	if err != nil {
		t.Fatal(err)
	}
	commands, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".commands")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(wouldBlock, "External 203.0.113.7/32") || strings.Contains(wouldBlock, "frontend") {
		t.Errorf("would-block list: %q, want the external peer only", wouldBlock)
	}
	if !strings.Contains(commands, "kubectl label wnpp -n shop deployment-web-ingress networkenforcer.kubewarden.io/promote=protect") {
		t.Errorf("commands: %q", commands)
	}
	// The native object of protect mode, rendered by the real extension with
	// its cache; none in monitor mode for backend kubernetes.
	native, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("native")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"protect mode: NetworkPolicy", "kind: NetworkPolicy", "kind: WorkloadNetworkPolicy",
		"monitor mode: no NetworkPolicy", "network-enforcer render --mode protect"} {
		if !strings.Contains(native, want) {
			t.Errorf("the native objects do not say %q: %q", want, native)
		}
	}
	screenshot(t, ctx, "review-proposal.png")

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/policies/shop/statefulset-db-ingress")); err != nil {
		t.Fatal(err)
	}
	violations, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("violations")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(violations, "shop/deployment/batch") || !strings.Contains(violations, "acknowledge-2") {
		t.Errorf("violations: %q", violations)
	}
	screenshot(t, ctx, "review-policy.png")
}

// TestBrowserFollowsChanges: an open page shows a new edge at its next poll,
// without a reload.
func TestBrowserFollowsChanges(t *testing.T) {
	controlplanetest.Require(t)
	ctx := startBrowser(t)
	_, h := startEnforcer(t, "review-browser-live")
	base := startReview(t, h, AuthModeAuto) // loopback: no token
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/?namespace=live")); err != nil {
		t.Fatal(err)
	}
	if _, err := waitGraph(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	f := newFixtures(time.Now())
	p := f.proposals[0].DeepCopy()
	p.Namespace = "live"
	if err := createFixtures(context.Background(), env.Client, fixtures{proposals: []v1alpha1.WorkloadNetworkPolicyProposal{*p}}); err != nil {
		t.Fatal(err)
	}
	// The control plane is the package's: the other tests count the
	// fixtures' edges, whatever order they run in.
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), p); err != nil {
			t.Errorf("removing the proposal in live: %v", err)
		}
	})
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`reviewGraph.edges("[state = 'would-block']").length === %d`, 1),
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		t.Fatalf("the open page did not show the new proposal's edges: %v", err)
	}
}
