package enforcerextension

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/clustertest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// TestResolveEveryFixturePod: every pod of the fixtures' cluster resolves, by IP,
// by name and by its Goldmane aggregate, to the workload the table says, or to
// the reason it cannot.
func TestResolveEveryFixturePod(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "resolve")
	kinds := map[string]bool{}
	for _, p := range clustertest.Pods() {
		want := workload.Ref{Namespace: p.Namespace, Kind: v1alpha1.WorkloadKind(p.WorkloadKind), Name: p.WorkloadName}
		var wantReason workload.Unresolved
		switch {
		case p.HostNetwork:
			want, wantReason = workload.Ref{}, workload.UnresolvedHostNetwork
		case p.WorkloadKind == "":
			want, wantReason = workload.Ref{}, workload.UnresolvedBarePod
		}
		kinds[p.WorkloadKind] = true
		check := func(how string, got workload.Ref, reason workload.Unresolved) {
			t.Helper()
			if got != want || reason != wantReason {
				t.Errorf("%s/%s by %s: %+v %q, want %+v %q", p.Namespace, p.Name, how, got, reason, want, wantReason)
			}
		}
		if p.IP != "" {
			got, reason := e.ResolveIP(p.IP, time.Time{})
			check("IP "+p.IP, got, reason)
		}
		got, reason := e.ResolvePod(p.Namespace, p.Name)
		check("name", got, reason)
		if p.GenerateName != "" {
			got, reason := e.ResolvePod(p.Namespace, p.GenerateName+"*")
			check("aggregate "+p.GenerateName+"*", got, reason)
		}
	}
	for _, k := range []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"} {
		if !kinds[k] {
			t.Errorf("the fixtures' cluster has no %s: the test covers less than it says", k)
		}
	}
	if _, reason := e.ResolveIP("192.0.2.99", time.Time{}); reason != workload.UnresolvedNoPod {
		t.Errorf("an unknown address: %q", reason)
	}
}

// TestSelectorOfEveryWorkload: every workload has a selector that selects its
// pods, and a Job's or CronJob's leaves out the labels of one run.
func TestSelectorOfEveryWorkload(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "selector")
	for _, w := range clustertest.Workloads() {
		ref := workload.Ref{Namespace: w.Namespace, Kind: v1alpha1.WorkloadKind(w.Kind), Name: w.Name}
		sel, uid, ok := e.Selector(context.Background(), ref)
		if !ok || uid == "" {
			t.Errorf("%s: no selector", ref)
			continue
		}
		ls, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range clustertest.Pods() {
			if p.Namespace == w.Namespace && p.WorkloadKind == w.Kind && p.WorkloadName == w.Name {
				var pod = podLabels(t, p.Namespace, p.Name)
				if !ls.Matches(pod) {
					t.Errorf("%s: selector %s does not select pod %s %v", ref, ls, p.Name, pod)
				}
			}
		}
		if strings.Contains(ls.String(), "job-name") || strings.Contains(ls.String(), "controller-uid") {
			t.Errorf("%s: selector %s names one run", ref, ls)
		}
	}
	if _, _, ok := e.Selector(context.Background(), workload.Ref{Namespace: "default", Kind: "Deployment", Name: "nope"}); ok {
		t.Error("a selector for a workload that does not exist")
	}
}

// TestWorkloadsOnEachNode: the workloads of each node are those of the
// fixture pods bound to it, once each, without the pods that have no
// workload; every node's together are every workload with a pod.
func TestWorkloadsOnEachNode(t *testing.T) {
	controlplanetest.Require(t)
	e := startEnforcer(t, "placement")
	want := map[string][]string{}
	var all []string
	for _, p := range clustertest.Pods() {
		if p.HostNetwork || p.WorkloadKind == "" {
			continue
		}
		w := workload.Ref{Namespace: p.Namespace, Kind: v1alpha1.WorkloadKind(p.WorkloadKind), Name: p.WorkloadName}.String()
		if !slices.Contains(want[p.Node], w) {
			want[p.Node] = append(want[p.Node], w)
		}
		if !slices.Contains(all, w) {
			all = append(all, w)
		}
	}
	if len(want) < 3 {
		t.Fatalf("the fixtures' pods are on %d nodes: the test covers less than it says", len(want))
	}
	// Other tests of the package may make pods of their own: only the
	// fixtures' workloads are compared.
	names := func(ws []workload.Ref) []string {
		var out []string
		for _, w := range ws {
			if slices.Contains(all, w.String()) {
				out = append(out, w.String())
			}
		}
		slices.Sort(out)
		return out
	}
	for node, ws := range want {
		slices.Sort(ws)
		if got := names(e.WorkloadsOn(node)); !slices.Equal(got, ws) {
			t.Errorf("on %s: %v, want %v", node, got, ws)
		}
	}
	slices.Sort(all)
	if got := names(e.WorkloadsOn("")); !slices.Equal(got, all) {
		t.Errorf("on every node: %v, want %v", got, all)
	}
	if got := e.WorkloadsOn("worker-9"); len(got) != 0 {
		t.Errorf("on a node without pods: %v", got)
	}
}
