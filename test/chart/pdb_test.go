package chart

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPodDisruptionBudgets: a budget for each Deployment of more than one
// replica, selecting exactly that Deployment's pods, evicting one at a time and
// never held by an unhealthy pod; none for a single replica (a drain is never
// blocked) or when switched off. Each is accepted by the API server.
func TestPodDisruptionBudgets(t *testing.T) {
	for _, tc := range []struct {
		name                string
		values              map[string]any
		enforcer, collector any // maxUnavailable, or nil: no budget
	}{
		{"defaults", nil, int64(1), nil},
		{"one enforcer", vals("controller.replicas", 1), nil, nil},
		{"three collectors", vals("telemetry.default.replicas", 3), int64(1), int64(1)},
		{"percentages", vals("controller.replicas", 4, "controller.podDisruptionBudget.maxUnavailable", "50%",
			"telemetry.default.replicas", 2, "telemetry.default.podDisruptionBudget.maxUnavailable", "50%"), "50%", "50%"},
		{"off", vals("controller.podDisruptionBudget.enabled", false,
			"telemetry.default.replicas", 2, "telemetry.default.podDisruptionBudget.enabled", false), nil, nil},
		{"no default collector", vals("telemetry.default.replicas", 2, "telemetry.collectorStrategy", "none"), int64(1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.values)
			want := map[string]any{fullname: tc.enforcer, fullname + "-collector": tc.collector}
			for name, maxUnavailable := range want {
				pdb := r.get("PodDisruptionBudget", namespace, name)
				if (pdb == nil) != (maxUnavailable == nil) {
					t.Fatalf("PodDisruptionBudget %s rendered: %v, want %v", name, pdb != nil, maxUnavailable != nil)
				}
				if pdb == nil {
					continue
				}
				if got := at(pdb.Object, "spec", "maxUnavailable"); fmt.Sprint(got) != fmt.Sprint(maxUnavailable) {
					t.Errorf("%s maxUnavailable %#v, want %#v", name, got, maxUnavailable)
				}
				if at(pdb.Object, "spec", "minAvailable") != nil {
					t.Errorf("%s sets minAvailable", name)
				}
				if got := at(pdb.Object, "spec", "unhealthyPodEvictionPolicy"); got != "AlwaysAllow" {
					t.Errorf("%s unhealthyPodEvictionPolicy %v", name, got)
				}
				deploy := r.must(t, "Deployment", namespace, name)
				sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
				if got := selected(r, sel); fmt.Sprint(got) != fmt.Sprint([]string{"Deployment/" + name}) {
					t.Errorf("%s selects %v, want exactly Deployment/%s", name, got, name)
				}
				if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n < 2 {
					t.Errorf("budget %s for %d replica(s)", name, n)
				}
			}
			if n := len(r.ofKind("PodDisruptionBudget")); n != len(filterNil(want)) {
				t.Errorf("%d PodDisruptionBudgets rendered", n)
			}
			dryRun(t, r.objs)
		})
	}
}

// selected returns the workloads (Deployment/name, DaemonSet/name) whose pods
// carry every label of sel.
func selected(r *rendered, sel map[string]string) []string {
	var out []string
	for _, o := range append(r.ofKind("Deployment"), r.ofKind("DaemonSet")...) {
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		if matches(sel, labels) {
			out = append(out, o.GetKind()+"/"+o.GetName())
		}
	}
	return out
}

// matches: labels has every key of sel with its value; an empty sel matches all.
func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func filterNil(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if v != nil {
			out[k] = v
		}
	}
	return out
}
