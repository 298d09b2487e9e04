package rendercmd

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/render"
)

// The diff's notes on standard error.
const (
	firstProposalNote = "WorkloadNetworkPolicyProposal shop/deployment-web-ingress: a first proposal, not an amendment: nothing to diff (render it without --diff)\n"
	ciliumMonitorNote = "WorkloadNetworkPolicyProposal pay/statefulset-ledger-egress-amendment: no CiliumNetworkPolicy to diff: " +
		"monitor mode: no CiliumNetworkPolicy; flows are judged against the spec: give --mode protect to diff the CiliumNetworkPolicy that protect mode creates\n"
)

// TestDiff: each backend's amendment beside its policy, in the policy's mode
// and in --mode; a List, several documents, JSON; several amendments and a
// first proposal at once.
func TestDiff(t *testing.T) {
	kubernetes, cilium, istio := readFile(t, "amendment.kubernetes.yaml"), readFile(t, "amendment.cilium.yaml"), readFile(t, "amendment.istio.yaml")
	for _, tc := range []struct {
		name, stdin string
		args        []string
		golden      []string // the goldens that the output is, a blank line between
		stderr      string
	}{
		// A NetworkPolicy in protect mode, the policy's: the rule that the
		// amendment removes and the two that it adds; the edge of a
		// revision that learning saw listed first.
		{name: "kubernetes", args: []string{"--diff", "-f", "testdata/amendment.kubernetes.yaml"}, golden: []string{"amendment.kubernetes.diff"}},
		{name: "kubernetes as JSON on stdin", stdin: toJSON(t, kubernetes), args: []string{"--diff"}, golden: []string{"amendment.kubernetes.diff"}},
		// Cilium in monitor mode, the policy's, has no object: the comments
		// alone, and a note that names --mode protect.
		{name: "cilium in monitor mode", stdin: cilium, args: []string{"--diff"}, golden: []string{"amendment.cilium.monitor.diff"}, stderr: ciliumMonitorNote},
		{name: "cilium in protect mode", stdin: cilium, args: []string{"--diff", "--mode", "protect"}, golden: []string{"amendment.cilium.protect.diff"}},
		// Istio's monitor mode is a dry-run AuthorizationPolicy; the policy
		// changed since the amendment was built on it, which the comments say.
		{name: "istio in monitor mode", stdin: istio, args: []string{"--diff"}, golden: []string{"amendment.istio.diff"}},
		{name: "istio in protect mode", stdin: istio, args: []string{"--diff", "--mode=protect"}, golden: []string{"amendment.istio.protect.diff"}},
		{name: "several amendments and a first proposal", stdin: kubernetes + "---\n" + readFile(t, "proposal.yaml") + "---\n" + istio,
			args: []string{"--diff"}, golden: []string{"amendment.kubernetes.diff", "amendment.istio.diff"}, stderr: firstProposalNote},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, tc.stdin, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr, tc.stderr)
			}
			if len(tc.golden) == 1 {
				golden(t, tc.golden[0], stdout)
				return
			}
			var want []string
			for _, g := range tc.golden {
				want = append(want, readFile(t, g))
			}
			if w := strings.Join(want, "\n"); stdout != w {
				t.Errorf("stdout\n%s\nwant %s, a blank line between:\n%s", stdout, strings.Join(tc.golden, ", "), w)
			}
		})
	}
}

// TestDiffShape: the diff is a unified diff of the two native objects, with
// the headers that name the policy's revision and the amendment, and every
// comment line starts with #; the edges of a learned revision come first.
func TestDiffShape(t *testing.T) {
	stdout, _, err := run(t, readFile(t, "amendment.kubernetes.yaml"), "--diff")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if lines[0] != "--- NetworkPolicy shop/deployment-web-egress (revision 3)" ||
		lines[1] != "+++ NetworkPolicy shop/deployment-web-egress (amendment deployment-web-egress-amendment)" ||
		!strings.HasPrefix(lines[2], "@@ -") {
		t.Fatalf("the headers:\n%s", strings.Join(lines[:3], "\n"))
	}
	var comments []string
	for _, l := range lines[3:] {
		switch {
		case strings.HasPrefix(l, "#"):
			comments = append(comments, l)
		case len(comments) > 0:
			t.Errorf("a line after the comments: %q", l)
		case l == "" || !strings.ContainsAny(l[:1], " +-@"):
			t.Errorf("not a line of a unified diff: %q", l)
		}
	}
	for _, want := range []string{"+          app: cart", "-          app: cache", "+          app: payments"} {
		if !strings.Contains(stdout, "\n"+want+"\n") {
			t.Errorf("the diff does not have %q", want)
		}
	}
	learned := strings.Index(stdout, "# + egress TCP/8443 to pay/Deployment/payments  LearnedRevision  web-6c5d4e3f2a")
	newRevision := strings.Index(stdout, "# + egress TCP/8080 to shop/Deployment/cart  NewRevision  web-7d9f8c6b5a")
	if learned < 0 || newRevision < 0 || learned > newRevision {
		t.Errorf("the added edges, learned revisions first:\n%s", strings.Join(comments, "\n"))
	}
}

// amendmentOnly is the amendment of the kubernetes testdata, as kubectl get
// prints it alone, and its policy.
func amendmentOnly(t *testing.T) (string, *v1alpha1.WorkloadNetworkPolicy) {
	t.Helper()
	objs, err := Parse(strings.NewReader(readFile(t, "amendment.kubernetes.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	var amendment []byte
	var policy *v1alpha1.WorkloadNetworkPolicy
	for _, o := range objs {
		if o.Proposal != nil {
			if amendment, err = yaml.Marshal(o.Proposal); err != nil {
				t.Fatal(err)
			}
		} else {
			policy = o.Policy
		}
	}
	return string(amendment), policy
}

// TestDiffPolicyFromTheCluster: an amendment read without its policy is
// diffed against the policy that the cluster holds.
func TestDiffPolicyFromTheCluster(t *testing.T) {
	amendment, policy := amendmentOnly(t)
	s, err := render.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(policy).Build()
	objs, err := Parse(strings.NewReader(amendment))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Diff(context.Background(), objs, "", c, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	golden(t, "amendment.kubernetes.diff", out.String())

	// A cluster without it.
	empty := fake.NewClientBuilder().WithScheme(s).Build()
	err = Diff(context.Background(), objs, "", empty, &out, &errOut)
	if want := "WorkloadNetworkPolicyProposal shop/deployment-web-egress-amendment: it amends WorkloadNetworkPolicy shop/deployment-web-egress, " +
		"which is neither among the objects read nor in the cluster"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestDiffOnAControlPlane: the command reads the policy from the API server
// of its --kubeconfig.
func TestDiffOnAControlPlane(t *testing.T) {
	env := controlplanetest.Start(t, controlplanetest.Options{})
	ctx := context.Background()
	amendment, policy := amendmentOnly(t)
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policy.Namespace}}); err != nil {
		t.Fatal(err)
	}
	policy.ResourceVersion, policy.UID, policy.CreationTimestamp = "", "", metav1.Time{}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The amendment was built on the policy's generation in this cluster.
	amendment = strings.Replace(amendment, `amends-generation: "3"`, `amends-generation: "1"`, 1)
	stdout, stderr, err := run(t, amendment, "--diff", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("stderr %q", stderr)
	}
	golden(t, "amendment.kubernetes.diff", stdout)
}

// TestRenderAmendment: without --diff, an amendment is rendered as the policy
// that its promotion changes: the policy's name, owned by the policy (its
// owner), with the amendment's spec.
func TestRenderAmendment(t *testing.T) {
	amendment, _ := amendmentOnly(t)
	stdout, _, err := run(t, amendment, "--mode", "protect")
	if err != nil {
		t.Fatal(err)
	}
	diff, _, err := run(t, readFile(t, "amendment.kubernetes.yaml"), "--diff")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: NetworkPolicy\n", "\n  name: deployment-web-egress\n", "    kind: WorkloadNetworkPolicy\n    name: deployment-web-egress\n",
		"    uid: 3f2e1d0c-9b8a-4765-8432-10fedcba9876\n", "          app: payments\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the amendment rendered does not have %q:\n%s", want, stdout)
		}
	}
	// The + side of the diff.
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "+ ") && !strings.Contains(stdout, "\n"+l[1:]+"\n") {
			t.Errorf("the diff adds %q, which the amendment rendered does not have", l)
		}
	}
}

// TestDiffWithoutStatus: an amendment whose status was left out (a copy kept
// in Git) is still found to amend its policy, by its owner; the comments say
// that its edges are not attributed.
func TestDiffWithoutStatus(t *testing.T) {
	var list map[string]any
	if err := yaml.Unmarshal([]byte(readFile(t, "amendment.kubernetes.yaml")), &list); err != nil {
		t.Fatal(err)
	}
	items := list["items"].([]any)
	delete(items[1].(map[string]any), "status")
	in, err := yaml.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, err := run(t, string(in), "--diff")
	if err != nil {
		t.Fatal(err)
	}
	withStatus, _, err := run(t, readFile(t, "amendment.kubernetes.yaml"), "--diff")
	if err != nil {
		t.Fatal(err)
	}
	diff, _, _ := strings.Cut(withStatus, "\n#")
	want := diff + "\n# amendment shop/deployment-web-egress-amendment of WorkloadNetworkPolicy shop/deployment-web-egress, in protect mode\n" +
		"# no status.amendment in the input: its edges are not attributed\n"
	if stdout != want {
		t.Errorf("without status:\n%s\nwant\n%s", stdout, want)
	}
}

// TestDiffErrors: what --diff refuses, and what it says.
func TestDiffErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	amendment, _ := amendmentOnly(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        []string
	}{
		{name: "no amendment", stdin: readFile(t, "proposal.yaml"), args: []string{"--diff"},
			want: []string{"no amendment among the objects read: --diff shows what an amendment (a proposal with the label networkenforcer.kubewarden.io/amends) changes in its policy"}},
		{name: "the policy neither read nor in a cluster", stdin: amendment, args: []string{"--diff"},
			want: []string{"WorkloadNetworkPolicyProposal shop/deployment-web-egress-amendment: it amends WorkloadNetworkPolicy shop/deployment-web-egress, which is not among the objects read",
				"kubectl get -n shop wnp/deployment-web-egress -o yaml", "--kubeconfig"}},
		{name: "a status.amendment that is not one", stdin: strings.Replace(amendment, "    learnedRevisionEdges: 1\n", "    learnedRevisionEdges: many\n", 1),
			args: []string{"--diff"}, want: []string{"document 1: WorkloadNetworkPolicyProposal: status.amendment: json: cannot unmarshal string"}},
		{name: "an amended spec that does not render", stdin: strings.Replace(readFile(t, "amendment.istio.yaml"), "      selector:\n        matchLabels:\n          app: api\n    targetRef",
			"      selector: {}\n    targetRef", 1), args: []string{"--diff"},
			want: []string{"WorkloadNetworkPolicyProposal pay/deployment-api-ingress-amendment: the policy as amendment deployment-api-ingress-amendment makes it: backend istio without spec.istio.selector.matchLabels"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _, err := run(t, tc.stdin, tc.args...)
			if err == nil {
				t.Fatalf("no error; printed %q", stdout)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q does not say %q", err, want)
				}
			}
			if stdout != "" {
				t.Errorf("printed %q with an error", stdout)
			}
		})
	}
}
