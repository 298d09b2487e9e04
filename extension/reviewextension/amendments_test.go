package reviewextension

import (
	"bytes"
	"context"
	"html"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/rendercmd"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// amendmentNamespace holds the amendment fixtures, apart from the other
// fixtures, whose graph the other tests count.
const amendmentNamespace = "rel"

// amendmentFixtures are the render subcommand's amendments beside their
// policies, one of each backend, moved to amendmentNamespace: a NetworkPolicy
// in protect mode (a learned revision's edge, a new revision's, a removed
// rule), an AuthorizationPolicy in monitor mode (a dry run) changed since its
// amendment was built, and a Cilium policy in monitor mode, which renders no
// object.
func amendmentFixtures(t testing.TB) fixtures {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	for _, backend := range []string{"kubernetes", "istio", "cilium"} {
		b, err := os.ReadFile(filepath.Join(root, "internal", "rendercmd", "testdata", "amendment."+backend+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := rendercmd.Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.Proposal != nil {
				o.Proposal.Namespace = amendmentNamespace
				f.proposals = append(f.proposals, *o.Proposal)
			} else {
				o.Policy.Namespace = amendmentNamespace
				f.policies = append(f.policies, *o.Policy)
			}
		}
	}
	return f
}

// withAmendments is the fixtures with the amendment fixtures.
func withAmendments(t *testing.T) fixtures {
	t.Helper()
	f, a := newFixtures(time.Now()), amendmentFixtures(t)
	f.proposals = append(f.proposals, a.proposals...)
	f.policies = append(f.policies, a.policies...)
	return f
}

// TestAmendmentPages: an amendment is set apart from a first proposal in the
// list, and shown on its policy's view and its own as the diff of the native
// object, with each added edge's revisions, learned revisions first and
// marked for review.
func TestAmendmentPages(t *testing.T) {
	base := startOnFakeWith(t, withAmendments(t))
	// html/template writes + as &#43;.
	for path, wants := range map[string][]string{
		"/": {
			`<tr class="amendment">`,
			`<a href="/proposals/rel/deployment-web-egress-amendment">rel/deployment-web-egress-amendment</a> <span class="badge amendment">amendment</span>`,
			`<td class="amends"><a href="/policies/rel/deployment-web-egress">policy deployment-web-egress</a>`,
			`<span class="review-first" title="edges made by a revision that was live while the policy was learned: review these first">1 LearnedRevision</span>`,
			// A first proposal says so.
			`<a href="/proposals/shop/deployment-web-ingress">shop/deployment-web-ingress</a></td>
  <td class="note">first proposal</td>`,
			// A policy links its amendments.
			`<a class="amendment" href="/proposals/rel/deployment-web-egress-amendment">deployment-web-egress-amendment</a>`,
		},
		"/policies/rel/deployment-web-egress": {
			`<section id="amendments">`,
			`<article class="amendment" id="amendment-deployment-web-egress-amendment">`,
			`<h3>Amendment <a href="/proposals/rel/deployment-web-egress-amendment">deployment-web-egress-amendment</a> of policy <a href="/policies/rel/deployment-web-egress">deployment-web-egress</a>, in protect mode</h3>`,
			`<h4>Added edges <span class="review-first">1 LearnedRevision: review first</span></h4>`,
			`<tr class="review-first">
<td><strong>review first</strong></td><td>LearnedRevision</td><td>egress TCP/8443 to pay/Deployment/payments</td>
<td>web-6c5d4e3f2a</td><td>registry.example.com/shop/web:1.9.3</td><td>2026-04-19T16:20:00Z</td>`,
			`<tr class="new-revision">
<td></td><td>NewRevision</td><td>egress TCP/8080 to shop/Deployment/cart</td>
<td>web-7d9f8c6b5a</td><td>registry.example.com/shop/web:2.0.0, registry.example.com/shop/envoy-sidecar:1.31</td><td>2026-05-05T13:58:40Z</td>
<td>peer cart-5b6c7d8e9f (image registry.example.com/shop/cart:1.4.2, created 2026-03-30T07:45:00Z)</td>`,
			`<tr><td>egress[1]</td><td>2026-04-21T10:00:00Z</td><td>12</td></tr>`,
			`<span class="head">--- NetworkPolicy rel/deployment-web-egress (revision 3)
</span>`,
			`<span class="del">-          app: cache
</span><span class="add">&#43;          app: cart
</span>`,
			`<span class="comment"># &#43; egress TCP/8443 to pay/Deployment/payments  LearnedRevision  web-6c5d4e3f2a`,
			`<pre class="command">kubectl get -n rel wnp/deployment-web-egress wnpp/deployment-web-egress-amendment -o yaml | network-enforcer render --diff</pre>`,
		},
		// Monitor mode renders no CiliumNetworkPolicy: the diff is of
		// protect mode's, and says so.
		"/policies/rel/statefulset-ledger-egress": {
			`, in protect mode</h3>`,
			`<p class="note amendment-fallback">monitor mode: no CiliumNetworkPolicy; flows are judged against the spec: this is the CiliumNetworkPolicy that protect mode creates.</p>`,
			`<span class="add">&#43;  - toFQDNs:
</span>`,
			`network-enforcer render --diff --mode protect</pre>`,
		},
		// Istio's ingress edges are the clients' releases; the policy
		// changed since the amendment was built.
		"/policies/rel/deployment-api-ingress": {
			`, in monitor mode</h3>`,
			`<p class="error stale">the amendment was built on generation 4 of the policy, which is at generation 5: promotion does not merge it; the writer builds it again on the policy as it is</p>`,
			`<td>ingress TCP/8443 from shop/CronJob/batch cluster.local/ns/shop/sa/batch</td>
<td>peer batch-3e2d1c0b</td>`,
			`<span class="head">--- AuthorizationPolicy rel/deployment-api-ingress (current)`,
		},
		"/proposals/rel/deployment-web-egress-amendment": {
			`<title>amendment rel/deployment-web-egress-amendment · Network Enforcer review</title>`,
			`<h1>Amendment rel/deployment-web-egress-amendment <span class="badge amendment">amends policy <a href="/policies/rel/deployment-web-egress">deployment-web-egress</a></span></h1>`,
			`<section id="amendment">`, `<article class="amendment" id="amendment-deployment-web-egress-amendment">`,
			"Promote into policy deployment-web-egress in protect mode (its spec becomes the amendment&#39;s):<pre>kubectl label wnpp -n rel deployment-web-egress-amendment networkenforcer.kubewarden.io/promote=protect</pre>",
			"kubectl get -n rel wnp/deployment-web-egress wnpp/deployment-web-egress-amendment -o yaml | network-enforcer render --diff",
		},
		"/policies/shop/statefulset-db-ingress": {`<p class="note" id="amendments-none">No amendment of this policy.</p>`},
	} {
		code, body := get(t, base+path)
		if code != 200 {
			t.Errorf("GET %s: %d %s", path, code, body)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s does not have %s", path, want)
			}
		}
	}
	// Learned revisions first.
	_, page := get(t, base+"/policies/rel/deployment-web-egress")
	if learned, added := strings.Index(page, `<tr class="review-first">`), strings.Index(page, `<tr class="new-revision">`); learned < 0 || learned > added {
		t.Error("the edge of a learned revision is not listed first")
	}
	// A first proposal is none of it.
	_, page = get(t, base+"/proposals/shop/deployment-web-ingress")
	for _, not := range []string{`id="amendment"`, "Amendment", "render --diff"} {
		if strings.Contains(page, not) {
			t.Errorf("a first proposal's view has %s", not)
		}
	}
}

// TestAmendmentDiffIsTheRenderCommands: each amendment's diff on the page is
// what `network-enforcer render --diff` prints for the policy and the
// amendment, byte for byte, in the mode that the page says.
func TestAmendmentDiffIsTheRenderCommands(t *testing.T) {
	f := amendmentFixtures(t)
	base := startOnFakeWith(t, f)
	diff := regexp.MustCompile(`(?s)<pre class="diff">(.*?)</pre>\s*<pre class="command">(.*?)</pre>`)
	tags := regexp.MustCompile(`</?span[^>]*>`)
	for _, policy := range f.policies {
		_, page := get(t, base+"/policies/"+policy.Namespace+"/"+policy.Name)
		m := diff.FindStringSubmatch(page)
		if m == nil {
			t.Errorf("%s: no diff on the page", policy.Name)
			continue
		}
		shown, command := html.UnescapeString(tags.ReplaceAllString(m[1], "")), html.UnescapeString(m[2])
		var in bytes.Buffer
		for _, o := range []any{policyObject(policy), amendmentObject(t, f, policy.Name)} {
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			in.WriteString("---\n")
			in.Write(b)
		}
		_, flags, _ := strings.Cut(command, "network-enforcer render ")
		var out bytes.Buffer
		if err := rendercmd.Run(context.Background(), strings.Fields(flags), &in, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if shown != out.String() {
			t.Errorf("%s: the page shows\n%s\n`network-enforcer render %s` prints\n%s", policy.Name, shown, flags, out.String())
		}
	}
	// The amendment's view shows the native object of its promotion: the
	// policy's, with the amendment's spec, as `network-enforcer render
	// --mode protect` prints it for the amendment alone.
	_, page := get(t, base+"/proposals/"+amendmentNamespace+"/deployment-web-egress-amendment")
	m := regexp.MustCompile(`(?s)<pre class="native" id="native-protect">(.*?)</pre>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the amendment's view shows no native object for protect mode")
	}
	in, err := yaml.Marshal(amendmentObject(t, f, "deployment-web-egress"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rendercmd.Run(context.Background(), []string{"--mode", "protect"}, bytes.NewReader(in), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := html.UnescapeString(m[1]); got != out.String() || !strings.Contains(got, "\n  name: deployment-web-egress\n") ||
		!strings.Contains(got, "uid: 3f2e1d0c-9b8a-4765-8432-10fedcba9876") {
		t.Errorf("the amendment's view shows\n%s\nnetwork-enforcer render prints\n%s", got, out.String())
	}
}

func policyObject(p v1alpha1.WorkloadNetworkPolicy) *v1alpha1.WorkloadNetworkPolicy {
	p.APIVersion, p.Kind = v1alpha1.GroupVersion.String(), "WorkloadNetworkPolicy"
	return &p
}

// amendmentObject is the amendment fixture of policy.
func amendmentObject(t *testing.T, f fixtures, policy string) *v1alpha1.WorkloadNetworkPolicyProposal {
	t.Helper()
	for _, p := range f.proposals {
		if p.Status.Amendment != nil && p.Status.Amendment.Policy == policy {
			p.APIVersion, p.Kind = v1alpha1.GroupVersion.String(), "WorkloadNetworkPolicyProposal"
			return &p
		}
	}
	t.Fatalf("no amendment of %s", policy)
	return nil
}

// createAmendmentFixtures writes the amendment fixtures to the test control
// plane, each amendment owned by its policy and built on the policy's
// generation as the writer makes it, and removes them when the test ends.
func createAmendmentFixtures(t *testing.T) fixtures {
	t.Helper()
	ctx := context.Background()
	f := amendmentFixtures(t)
	if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: amendmentNamespace}})); err != nil {
		t.Fatal(err)
	}
	created := map[string]*v1alpha1.WorkloadNetworkPolicy{}
	for i := range f.policies {
		p := f.policies[i].DeepCopy()
		p.ResourceVersion, p.UID, p.Generation, p.CreationTimestamp = "", "", 0, metav1.Time{}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("policy %s: %v", p.Name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, p) })
		created[p.Name] = p
	}
	for i := range f.proposals {
		p := f.proposals[i].DeepCopy()
		p.ResourceVersion, p.UID, p.Generation, p.CreationTimestamp = "", "", 0, metav1.Time{}
		for k := range p.OwnerReferences {
			p.OwnerReferences[k].UID = created[p.OwnerReferences[k].Name].UID
		}
		p.Annotations[v1alpha1.AmendsGenerationAnnotation] = strconv.FormatInt(created[p.Status.Amendment.Policy].Generation, 10)
		status := p.Status
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatalf("amendment %s: %v", p.Name, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, p) })
		p.Status = status
		if err := env.Client.Status().Update(ctx, p); err != nil {
			t.Fatalf("amendment %s status: %v", p.Name, err)
		}
	}
	return f
}

// TestBrowserAmendments drives the page in headless Chromium against the
// real control plane and enforcer: the list sets amendments apart, and a
// policy's view shows its amendment's edges, learned revisions first and
// marked, and the diff in colour.
func TestBrowserAmendments(t *testing.T) {
	controlplanetest.Require(t)
	ctx := startBrowser(t)
	createAmendmentFixtures(t)
	_, h := startEnforcer(t, "review-browser-amendments")
	base := startReview(t, h, AuthModeAuto) // loopback: no token
	policy := base + "/policies/" + amendmentNamespace + "/deployment-web-egress"
	// The amendment, and the policy's revision as it stands once its
	// revisions are recorded (asynchronously): the diff names it.
	testwait.For(t, "the policy's view to show its amendment on its revision", 30*time.Second, func() bool {
		_, page := get(t, policy)
		return strings.Contains(page, `id="amendment-deployment-web-egress-amendment"`) &&
			strings.Contains(page, "--- NetworkPolicy rel/deployment-web-egress (revision 3)")
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(policy), chromedp.WaitVisible(chromedp.ID("amendments"))); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](`[...document.querySelectorAll(
		"#amendment-deployment-web-egress-amendment table.added-edges tr:not(:first-child)")].map(tr => ({
		class: tr.className, origin: tr.cells[1].textContent, edge: tr.cells[2].textContent, revision: tr.cells[3].textContent,
		background: getComputedStyle(tr.cells[0]).backgroundColor}))`))
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"class": "review-first", "origin": "LearnedRevision", "edge": "egress TCP/8443 to pay/Deployment/payments", "revision": "web-6c5d4e3f2a", "background": "rgb(255, 247, 237)"},
		{"class": "new-revision", "origin": "NewRevision", "edge": "egress TCP/8080 to shop/Deployment/cart", "revision": "web-7d9f8c6b5a", "background": "rgba(0, 0, 0, 0)"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("the added edges:\n%v\nwant\n%v", rows, want)
	}
	// The diff in colour, and in it the policy's revision in this cluster.
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({
		add: getComputedStyle(document.querySelector("pre.diff span.add")).backgroundColor,
		del: getComputedStyle(document.querySelector("pre.diff span.del")).backgroundColor,
		text: document.querySelector("pre.diff").textContent})`))
	if err != nil {
		t.Fatal(err)
	}
	if colours["add"] != "rgb(220, 252, 231)" || colours["del"] != "rgb(254, 226, 226)" {
		t.Errorf("the diff's added lines are %s, removed lines %s", colours["add"], colours["del"])
	}
	for _, w := range []string{"--- NetworkPolicy rel/deployment-web-egress (revision 3)\n", "+          app: cart\n", "-          app: cache\n"} {
		if !strings.Contains(colours["text"], w) {
			t.Errorf("the diff does not have %q:\n%s", w, colours["text"])
		}
	}
	if strings.Contains(colours["text"], "generation") {
		t.Errorf("an amendment built on the policy as it is is said to be stale:\n%s", colours["text"])
	}
	screenshot(t, ctx, "review-amendment.png")

	// In the list, an amendment is a row of its own kind.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("proposals"))); err != nil {
		t.Fatal(err)
	}
	list, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("#proposals tr:not(:first-child)")].map(
		tr => [tr.cells[0].querySelector("a").textContent, tr.className + " | " + tr.cells[1].textContent.replace(/\s+/g, " ").trim() + " | " +
			getComputedStyle(tr.cells[0]).borderLeftColor]))`))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]string{
		"rel/deployment-web-egress-amendment":     "amendment | policy deployment-web-egress 1 LearnedRevision | rgb(124, 58, 237)",
		"rel/deployment-api-ingress-amendment":    "amendment | policy deployment-api-ingress 1 LearnedRevision | rgb(124, 58, 237)",
		"rel/statefulset-ledger-egress-amendment": "amendment | policy statefulset-ledger-egress | rgb(124, 58, 237)",
		"shop/deployment-web-ingress":             " | first proposal | rgb(229, 231, 235)",
	} {
		if list[name] != w {
			t.Errorf("the list's row of %s: %q, want %q", name, list[name], w)
		}
	}
}
