package rendercmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files from what the command prints")

// run runs the command with args on stdin, and returns what it printed.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = Run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// golden compares got with testdata/name, which -update rewrites.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readFile(t, name); got != want {
		t.Errorf("the output differs from %s (rerun with -update to see it):\n%s", path, got)
	}
}

// TestRender: a proposal in each mode, from a file and from standard input;
// a List of a proposal and a policy; JSON as kubectl -o json prints it.
func TestRender(t *testing.T) {
	proposal := readFile(t, "proposal.yaml")
	for _, tc := range []struct {
		name, stdin string
		args        []string
		golden      string
		stderr      string
	}{
		{name: "proposal from a file", args: []string{"--mode", "protect", "-f", "testdata/proposal.yaml"}, golden: "proposal.protect.golden.yaml"},
		{name: "proposal from stdin", stdin: proposal, args: []string{"--mode=protect"}, golden: "proposal.protect.golden.yaml"},
		{name: "proposal from -", stdin: proposal, args: []string{"--mode", "protect", "-f", "-"}, golden: "proposal.protect.golden.yaml"},
		{name: "proposal in monitor mode", stdin: proposal, args: []string{"--mode", "monitor"},
			stderr: "WorkloadNetworkPolicyProposal shop/deployment-web-ingress: no NetworkPolicy: monitor mode: no NetworkPolicy; flows are judged against spec.kubernetes\n"},
		{name: "list", stdin: readFile(t, "list.yaml"), args: []string{"--mode", "monitor"}, golden: "list.monitor.golden.yaml",
			stderr: "WorkloadNetworkPolicy shop/deployment-web-egress: no CiliumNetworkPolicy: monitor mode: no CiliumNetworkPolicy; flows are judged against the spec\n"},
		{name: "list and a second document", stdin: readFile(t, "list.yaml") + "---\n" + proposal, args: []string{"--mode", "protect"}, golden: "list.protect.golden.yaml"},
		{name: "json", stdin: toJSON(t, proposal), args: []string{"--mode", "protect"}, golden: "proposal.protect.golden.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, err := run(t, tc.stdin, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr, tc.stderr)
			}
			if tc.golden == "" {
				if stdout != "" {
					t.Errorf("stdout %q, want nothing", stdout)
				}
				return
			}
			golden(t, tc.golden, stdout)
		})
	}
}

func toJSON(t *testing.T, y string) string {
	t.Helper()
	b, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPolicyMode: a policy renders in its spec.mode, or in --mode.
func TestPolicyMode(t *testing.T) {
	policy := strings.Replace(readFile(t, "proposal.yaml"), "kind: WorkloadNetworkPolicyProposal", "kind: WorkloadNetworkPolicy", 1)
	policy = strings.Replace(policy, "\nspec:\n", "\nspec:\n  mode: protect\n", 1)
	own, _, err := run(t, policy)
	if err != nil {
		t.Fatal(err)
	}
	// The owner reference is the policy's own, by its UID.
	if !strings.Contains(own, "kind: NetworkPolicy\n") || !strings.Contains(own, "    uid: 0b5c1d9e-4a61-4f0e-9d7c-2f1b3c4d5e6f\n") {
		t.Errorf("the policy in protect mode:\n%s", own)
	}
	monitor, stderr, err := run(t, policy, "--mode", "monitor")
	if err != nil || monitor != "" || !strings.Contains(stderr, "no NetworkPolicy") {
		t.Errorf("the policy in --mode monitor: %v %q %q", err, monitor, stderr)
	}
}

// TestEntitiesFromTheCluster: the API server and the nodes are their
// addresses in the cluster that the command reads.
func TestEntitiesFromTheCluster(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}},
			Ports:      []discoveryv1.EndpointPort{{Port: ptr.To[int32](6443), Protocol: ptr.To(corev1.ProtocolTCP)}},
		},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.21"}}}},
	).Build()
	objs, err := Parse(strings.NewReader(readFile(t, "entities.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Render(context.Background(), objs, "protect", c, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	golden(t, "entities.protect.golden.yaml", out.String())
}

// TestEntitiesWithoutACluster: without a kubeconfig, an object whose entities
// are addresses in the cluster is an error that names the flag, and nothing
// is printed; an object without entities needs no cluster.
func TestEntitiesWithoutACluster(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	stdout, _, err := run(t, readFile(t, "entities.yaml")+"---\n"+readFile(t, "proposal.yaml"), "--mode", "protect")
	if err == nil || stdout != "" {
		t.Fatalf("no error without a cluster: %q", stdout)
	}
	for _, want := range []string{"WorkloadNetworkPolicyProposal shop/deployment-web-egress", "entities", "--kubeconfig"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	// Monitor mode asks for no NetworkPolicy, and so for no address.
	if _, stderr, err := run(t, readFile(t, "entities.yaml"), "--mode", "monitor"); err != nil || !strings.Contains(stderr, "no NetworkPolicy") {
		t.Errorf("monitor mode without a cluster: %v %q", err, stderr)
	}
	_, _, err = run(t, readFile(t, "entities.yaml"), "--mode", "protect", "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a kubeconfig that is not there: %v", err)
	}
}

// TestErrors: what the command refuses, and what it says.
func TestErrors(t *testing.T) {
	proposal := readFile(t, "proposal.yaml")
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{name: "unknown mode", stdin: proposal, args: []string{"--mode", "x"}, want: `invalid mode "x": must be one of monitor, protect`},
		{name: "proposal without a mode", stdin: proposal, want: "WorkloadNetworkPolicyProposal shop/deployment-web-ingress: a proposal is rendered as the policy that its promotion creates: give its mode with --mode monitor or --mode protect"},
		{name: "empty input", stdin: "", args: []string{"--mode", "protect"}, want: "the input holds no WorkloadNetworkPolicyProposal or WorkloadNetworkPolicy"},
		{name: "not YAML", stdin: "kind: [", args: []string{"--mode", "protect"}, want: "document 1: "},
		{name: "another kind", stdin: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", args: []string{"--mode", "protect"},
			want: `document 1: apiVersion "apps/v1" kind "Deployment": want a WorkloadNetworkPolicyProposal or a WorkloadNetworkPolicy of networkenforcer.kubewarden.io/v1alpha1`},
		{name: "another kind in a list", stdin: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n", args: []string{"--mode", "protect"},
			want: `document 1: item 0: apiVersion "v1" kind "ConfigMap"`},
		{name: "unknown field", stdin: strings.Replace(proposal, "  backend: kubernetes\n", "  backend: kubernetes\n  color: blue\n", 1), args: []string{"--mode", "protect"},
			want: `document 1: WorkloadNetworkPolicyProposal: json: unknown field "color"`},
		{name: "no namespace", stdin: strings.Replace(proposal, "  namespace: shop\n", "", 1), args: []string{"--mode", "protect"},
			want: `document 1: WorkloadNetworkPolicyProposal "/deployment-web-ingress" without metadata.namespace or metadata.name`},
		{name: "spec the CRD refuses", stdin: strings.Replace(proposal, "  backend: kubernetes\n", "  backend: istio\n", 1), args: []string{"--mode", "protect"},
			want: "WorkloadNetworkPolicyProposal shop/deployment-web-ingress: backend istio without spec.istio.selector.matchLabels"},
		{name: "unknown backend", stdin: strings.Replace(proposal, "  backend: kubernetes\n", "  backend: calico\n", 1), args: []string{"--mode", "protect"},
			want: `WorkloadNetworkPolicyProposal shop/deployment-web-ingress: unknown backend "calico"`},
		{name: "an argument", stdin: proposal, args: []string{"--mode", "protect", "proposal.yaml"}, want: `unexpected arguments ["proposal.yaml"]: give the file with -f`},
		{name: "a missing file", args: []string{"--mode", "protect", "-f", "testdata/missing.yaml"}, want: "open testdata/missing.yaml: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _, err := run(t, tc.stdin, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if stdout != "" {
				t.Errorf("printed %q with an error", stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	_, stderr, err := run(t, "", "-h")
	if !errors.Is(err, pflag.ErrHelp) || !strings.Contains(stderr, "Usage: network-enforcer render") || !strings.Contains(stderr, "-kubeconfig") ||
		!strings.Contains(stderr, "-diff") {
		t.Errorf("-h: %v\n%s", err, stderr)
	}
}

// FuzzParse: whatever the input, Parse, Render and Diff return an error or
// objects, and never panic; an object that Parse returns has a namespace and
// a name.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"proposal.yaml", "list.yaml", "entities.yaml", "amendment.kubernetes.yaml", "amendment.cilium.yaml", "amendment.istio.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if j, err := yaml.YAMLToJSON(b); err == nil {
			f.Add(j)
		}
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"kind":"List"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.String() == "no object" || strings.HasSuffix(o.String(), "/") || strings.Contains(o.String(), " /") {
				t.Fatalf("an object without a namespace or a name: %s", o)
			}
		}
		for _, mode := range []v1alpha1.PolicyMode{v1alpha1.PolicyModeMonitor, v1alpha1.PolicyModeProtect} {
			_ = Render(context.Background(), objs, mode, nil, &bytes.Buffer{}, &bytes.Buffer{})
			_ = Diff(context.Background(), objs, mode, nil, &bytes.Buffer{}, &bytes.Buffer{})
		}
	})
}
