package reviewextension

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/extension/policycontrollerextension"
	"github.com/kubewarden/network-enforcer/extension/reviewextension/internal/metadata"
	"github.com/kubewarden/network-enforcer/internal/rendercmd"
)

// The fake enforcer renders a proposal's native objects as the policy
// controller extension does, under its default ID.
var _ policycontrollerextension.Renderer = (*enforcerextensiontest.Enforcer)(nil)

// startOnFake serves the page on loopback, without a token, from a fake
// enforcer that holds the fixtures.
func startOnFake(t *testing.T) string {
	t.Helper()
	return startOnFakeWith(t, newFixtures(time.Now()))
}

// startOnFakeWith is startOnFake with the fixtures f.
func startOnFakeWith(t *testing.T, f fixtures) string {
	t.Helper()
	fake := enforcerextensiontest.New()
	for i := range f.proposals {
		fake.SetProposal(&f.proposals[i])
	}
	for i := range f.policies {
		fake.SetPolicy(&f.policies[i])
	}
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = "127.0.0.1:0"
	s := newServer(extension.Settings{ID: component.NewID(metadata.Type), TelemetrySettings: componenttest.NewNopTelemetrySettings()}, cfg, nil)
	if err := s.Start(context.Background(), fake.Host(enforcerextension.DefaultReference())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return strings.TrimSuffix(s.url(), "/")
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPagesOnLoopback(t *testing.T) {
	base := startOnFake(t)
	for path, wants := range map[string][]string{
		"/": {"Cluster", `href="/proposals/shop/deployment-web-ingress"`, `href="/policies/pay/deployment-api-ingress"`, `data-url="/graph.json"`,
			`<td><abbr class="estimate" title="an estimate: the tracking limit was reached, or edges are not listed; see the EvidenceComplete condition">about</abbr> 193806</td>`,
			`<td class="not-ready" title="Coverage is False (LostEvents: the data plane lost 17 events on node worker-2)">NotCovered</td>`,
			`<td class="ready" title="stable, covered">ready</td>`},
		"/proposals/shop/deployment-web-egress": {
			`<p class="ready" id="ready">Ready to promote: stable, covered</p>`,
			`<dd><abbr class="estimate" title="an estimate: the tracking limit was reached, or edges are not listed; see the EvidenceComplete condition">about</abbr> 193806 (193804 not listed)</dd>`,
			`<dd id="estimated">the counts are estimates, within about 3.25 %: see the EvidenceComplete condition</dd>`,
		},
		"/?namespace=pay":          {"Namespace pay", `data-url="/graph.json?namespace=pay"`, "deployment-api-ingress"},
		"/graph.dot":               {"digraph review"},
		"/graph.mmd":               {"flowchart LR"},
		"/graph.mmd?namespace=pay": {`subgraph ns0["pay"]`},
		"/proposals/shop/deployment-web-ingress": {
			`<table id="would-block">`, "External 203.0.113.7/32",
			`<p class="not-ready" id="not-ready">Not ready (NotCovered): Coverage is False (LostEvents: the data plane lost 17 events on node worker-2)</p>`,
			`<table id="coverage-gaps">`, `<tr><td>LostEvents</td><td>1</td><td>17</td><td>worker-2</td>`,
			"kubectl label wnpp -n shop deployment-web-ingress networkenforcer.kubewarden.io/promote=protect",
			"kubectl label wnpp -n shop deployment-web-ingress networkenforcer.kubewarden.io/promote=monitor",
			`<h3>protect mode: NetworkPolicy</h3>`, `<pre class="native" id="native-protect">apiVersion: networking.k8s.io/v1`,
			`<p class="note" id="native-monitor-none">monitor mode: no NetworkPolicy; flows are judged against spec.kubernetes</p>`,
			"kubectl get wnpp -n shop deployment-web-ingress -o yaml | network-enforcer render --mode protect",
		},
		// Every rule that the policy allows: its NetworkPolicy rules and
		// the peers beyond the workloads.
		"/policies/pay/deployment-api-ingress": {"kubernetes:", "ingress:", "outside:", "entity: Nodes"},
		"/policies/shop/statefulset-db-ingress": {
			`kubectl patch wnp -n shop statefulset-db-ingress --type merge -p &#39;{&#34;spec&#34;:{&#34;mode&#34;:&#34;protect&#34;}}&#39;`,
			"kubectl annotate wnp -n shop statefulset-db-ingress networkenforcer.kubewarden.io/acknowledge-2=&#39;&lt;reason&gt;&#39;",
			`<table id="violations">`, `<table id="acknowledged">`, "a one-off backfill", `<tr class="unused"><td>ingress[1]</td>`,
		},
	} {
		code, body := get(t, base+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s does not have %s", path, want)
			}
		}
	}
	// The page's script draws with the server's palette, the one that DOT and
	// Mermaid use.
	_, page := get(t, base+"/")
	m := regexp.MustCompile(`<script type="application/json" id="palette">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page carries no palette")
	}
	var pj paletteJSON
	if err := json.Unmarshal([]byte(m[1]), &pj); err != nil {
		t.Fatalf("the page's palette %s: %v", m[1], err)
	}
	if !reflect.DeepEqual(pj, newPaletteJSON()) {
		t.Errorf("the page's palette %+v, want %+v", pj, newPaletteJSON())
	}
	// Nothing to log out of on loopback.
	if _, body := get(t, base+"/"); strings.Contains(body, "Log out") {
		t.Error("the loopback page offers to log out")
	}
	if code, _ := get(t, base+"/proposals/shop/missing"); code != http.StatusNotFound {
		t.Errorf("a missing proposal: %d, want 404", code)
	}
	_, body := get(t, base+"/graph.json?namespace=pay")
	var g Graph
	if err := json.Unmarshal([]byte(body), &g); err != nil {
		t.Fatal(err)
	}
	// Filtered on the server: only pay's policy and its peers.
	if len(g.Edges) != 2 || g.Counts[StateProtected] != 2 || len(g.Nodes) != 3 {
		t.Fatalf("pay's graph: %+v", g)
	}
}

// TestNativeObjectIsTheRenderCommands: a proposal's page shows, for protect
// mode, what `network-enforcer render` prints for the proposal, byte for byte.
func TestNativeObjectIsTheRenderCommands(t *testing.T) {
	base := startOnFake(t)
	_, page := get(t, base+"/proposals/shop/deployment-web-ingress")
	m := regexp.MustCompile(`(?s)<pre class="native" id="native-protect">(.*?)</pre>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page shows no native object for protect mode")
	}
	var proposal *v1alpha1.WorkloadNetworkPolicyProposal
	f := newFixtures(time.Now())
	for i := range f.proposals {
		if f.proposals[i].Name == "deployment-web-ingress" {
			proposal = &f.proposals[i]
		}
	}
	proposal.APIVersion, proposal.Kind = v1alpha1.GroupVersion.String(), "WorkloadNetworkPolicyProposal"
	in, err := yaml.Marshal(proposal)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rendercmd.Run(context.Background(), []string{"--mode", "protect"}, bytes.NewReader(in), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := html.UnescapeString(m[1]); got != out.String() {
		t.Errorf("the page shows\n%s\nnetwork-enforcer render prints\n%s", got, out.String())
	}
}
