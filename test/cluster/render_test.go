//go:build cluster

package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// The render subcommand on the real node: a proposal is printed by the built
// binary (`kubectl get wnpp -o yaml | network-enforcer render --mode MODE`)
// just before its promotion, and the native object that the render controller
// then creates is compared with what it printed.

// nativeResources are the kubectl resources of the native kinds.
var nativeResources = map[string]string{
	"NetworkPolicy":       "networkpolicies.networking.k8s.io",
	"AuthorizationPolicy": "authorizationpolicies.security.istio.io",
	"CiliumNetworkPolicy": "ciliumnetworkpolicies.cilium.io",
}

// promoteRendered prints proposal ns/name in mode with the built binary's
// render subcommand, reading the cluster (the entities' addresses) through
// the suite's kubeconfig, and promotes the very proposal that it printed: the
// label carries the printed resourceVersion, and a proposal written in
// between is printed again. It returns what the binary printed: nothing for
// a mode without an object.
func promoteRendered(t *testing.T, ns, name, mode string) string {
	t.Helper()
	bin := filepath.Join(env.root, "bin", "network-enforcer")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the built binary: %v (make build)", err)
	}
	for attempt := 0; ; attempt++ {
		in := kubectl(t, "-n", ns, "get", "workloadnetworkpolicyproposal", name, "-o", "yaml")
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(in), &meta); err != nil || meta.Metadata.ResourceVersion == "" {
			t.Fatalf("the proposal %s/%s as kubectl prints it: %v\n%s", ns, name, err, in)
		}
		cmd := testproc.Command(bin, "render", "--mode", mode, "--kubeconfig", env.kubeconfig)
		cmd.Stdin = strings.NewReader(in)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("network-enforcer render --mode %s of %s/%s: %v: %s", mode, ns, name, err, errOut.String())
		}
		_, err := kubectlErr("", "-n", ns, "label", "workloadnetworkpolicyproposal", name,
			"networkenforcer.kubewarden.io/promote="+mode, "--resource-version", meta.Metadata.ResourceVersion)
		if err == nil {
			if out.Len() == 0 {
				t.Logf("render --mode %s of %s/%s printed no object: %s", mode, ns, name, strings.TrimSpace(errOut.String()))
			}
			return out.String()
		}
		if !strings.Contains(err.Error(), "the object has been modified") || attempt == 10 {
			t.Fatal(err)
		}
	}
}

// checkRendered waits for the native object that printed (promoteRendered's
// output) describes and checks that it is what was printed, but for what the
// API server and the data plane set: uid, resourceVersion,
// creationTimestamp, managedFields, generation, status, and the owner
// reference's UID, which the policy had only once promoted.
func checkRendered(t *testing.T, printed string) {
	t.Helper()
	want := map[string]any{}
	if err := yaml.Unmarshal([]byte(printed), &want); err != nil {
		t.Fatalf("render printed %v:\n%s", err, printed)
	}
	kind, _ := want["kind"].(string)
	meta, _ := want["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	resource := nativeResources[kind]
	if resource == "" || ns == "" || name == "" {
		t.Fatalf("render printed a %q %s/%s:\n%s", kind, ns, name, printed)
	}
	var in string
	waitFor(t, "the "+kind+" "+ns+"/"+name, time.Minute, func() bool {
		out, err := kubectlErr("", "-n", ns, "get", resource, name, "-o", "yaml")
		in = out
		return err == nil
	})
	have := map[string]any{}
	if err := yaml.Unmarshal([]byte(in), &have); err != nil {
		t.Fatal(err)
	}
	delete(have, "status")
	if m, ok := have["metadata"].(map[string]any); ok {
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
			delete(m, f)
		}
		refs, _ := m["ownerReferences"].([]any)
		for _, r := range refs {
			if ref, ok := r.(map[string]any); ok {
				delete(ref, "uid")
			}
		}
	}
	wantYAML, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	haveYAML, err := yaml.Marshal(have)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wantYAML, haveYAML) {
		t.Errorf("render printed, for %s/%s,\n%s\nthe render controller created\n%s", ns, name, wantYAML, haveYAML)
		return
	}
	t.Logf("the %s %s/%s is what network-enforcer render printed before the promotion", kind, ns, name)
}
