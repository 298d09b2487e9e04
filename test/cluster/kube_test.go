//go:build cluster

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/testproc"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// kubectlErr runs the cluster's kubectl (the one built at the node's version)
// against the cluster, with stdin when it is not empty.
func kubectlErr(stdin string, args ...string) (string, error) {
	cmd := testproc.Command(filepath.Join(env.bin, "kubectl"), append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// kubectl is kubectlErr that fails t on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr("", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitEstablished waits until the CRDs names (crd/<name>) are Established.
// kubectl wait fails at once, rather than waiting, on a CRD whose status the
// API server has not written yet (".status.conditions accessor error"), which
// happens right after the CRD is created: it is asked again until it waits.
func waitEstablished(t *testing.T, names ...string) {
	t.Helper()
	waitFor(t, "CRDs Established", time.Minute, func() bool {
		_, err := kubectlErr("", append([]string{"wait", "--for=condition=Established", "--timeout=10s"}, names...)...)
		return err == nil
	})
}

// apply applies manifests.
func apply(t *testing.T, manifests string) {
	t.Helper()
	if _, err := kubectlErr(manifests, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 200 ms, each look a program run at the least,
// until it holds, or fails t after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testwait.Poll(t, what, timeout, 200*time.Millisecond, cond)
}

// waitReady waits until the pods that selector picks in namespace are all
// Ready, through their own probes, and there are want of them.
func waitReady(t *testing.T, namespace, selector string, want int, timeout time.Duration) []pod {
	t.Helper()
	var pods []pod
	deadline := time.Now().Add(timeout)
	for {
		pods = listPods(t, namespace, selector)
		ready := 0
		for _, p := range pods {
			if p.ready() && p.DeletionTimestamp == "" {
				ready++
			}
		}
		if ready == want && len(pods) == want {
			return pods
		}
		if time.Now().After(deadline) {
			out, _ := kubectlErr("", "-n", namespace, "describe", "pods", "-l", selector)
			t.Fatalf("timed out after %s waiting for %d Ready pods %s in %s; have %d of %d\n%s", timeout, want, selector, namespace, ready, len(pods), out)
		}
		// The poll's own interval, so that the loop does not spin while it
		// waits for the pods.
		time.Sleep(300 * time.Millisecond)
	}
}

// pod is what the tests read of a Pod.
type pod struct {
	Name              string
	IP                string
	DeletionTimestamp string
	Conditions        []struct{ Type, Status string }
}

func (p pod) ready() bool {
	for _, c := range p.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func listPods(t *testing.T, namespace, selector string) []pod {
	t.Helper()
	out := kubectl(t, "-n", namespace, "get", "pods", "-l", selector, "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string `json:"name"`
				DeletionTimestamp string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				PodIP      string `json:"podIP"`
				Conditions []struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var pods []pod
	for _, it := range list.Items {
		p := pod{Name: it.Metadata.Name, IP: it.Status.PodIP, DeletionTimestamp: it.Metadata.DeletionTimestamp}
		for _, c := range it.Status.Conditions {
			p.Conditions = append(p.Conditions, struct{ Type, Status string }{c.Type, c.Status})
		}
		pods = append(pods, p)
	}
	return pods
}

// httpDo sends a request from the node to a pod's address (the node reaches
// its pods over the bridge) and returns the body.
func httpDo(method, url, body string) (string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return string(b), nil
}

// logsOnFailure logs, when t has failed, the recent logs of the pods that
// each namespace/selector picks: what a person would look at first.
func logsOnFailure(t *testing.T, selectors ...string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, s := range selectors {
			ns, sel, _ := strings.Cut(s, "/")
			out, err := kubectlErr("", "-n", ns, "logs", "-l", sel, "--all-containers", "--prefix", "--tail=60")
			t.Logf("logs of %s in %s:\n%s%v", sel, ns, out, err)
		}
	})
}

// deleting is the namespaces whose deletion a test asked for when it ended,
// which the next test waits for (awaitDeletions).
var deleting []string

// deleteNamespaceAfter deletes ns when t ends, without waiting there: the
// namespaces of a test go at once, each pod's termination beside the others',
// rather than one after the other.
func deleteNamespaceAfter(t *testing.T, ns string) {
	t.Helper()
	t.Cleanup(func() {
		if out, err := kubectlErr("", "delete", "namespace", ns, "--wait=false", "--ignore-not-found"); err != nil {
			t.Errorf("deleting namespace %s: %v %s", ns, err, out)
		}
		// The namespace controller deletes the pods only at its first look,
		// and then waits half of their longest grace period before it looks
		// again, however soon they end (its estimate). Pods deleted now,
		// while no controller may create more in the terminating namespace,
		// are gone by that first look.
		if out, err := kubectlErr("", "-n", ns, "delete", "pods", "--all", "--wait=false", "--ignore-not-found"); err != nil {
			t.Errorf("deleting the pods of namespace %s: %v %s", ns, err, out)
		}
		deleting = append(deleting, "namespace/"+ns)
	})
}

// awaitDeletions waits until the namespaces that the earlier tests deleted are
// gone, so that a test never meets another's objects or a terminating
// namespace of the name it creates.
func awaitDeletions(t *testing.T) {
	t.Helper()
	if len(deleting) == 0 {
		return
	}
	start := time.Now()
	args := append([]string{"wait", "--for=delete", "--timeout=2m"}, deleting...)
	if out, err := kubectlErr("", args...); err != nil {
		t.Fatalf("the earlier tests' namespaces %v were not gone after 2m: %v %s", deleting, err, out)
	}
	t.Logf("the earlier tests' namespaces were gone %s after this test began", time.Since(start).Round(100*time.Millisecond))
	deleting = nil
}
