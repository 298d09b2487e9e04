package chart

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubewarden/network-enforcer/connector/policydeniesconnector"
	"github.com/kubewarden/network-enforcer/exporter/k8swriterexporter"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
	"github.com/kubewarden/network-enforcer/processor/violationprocessor"
)

// TestGrafanaDashboard: off by default; on, one ConfigMap with Grafana's
// sidecar label whose dashboard is valid JSON with a query on each panel, and
// queries on the denies counter and on the enforcer's own metrics.
func TestGrafanaDashboard(t *testing.T) {
	if cms := dashboards(render(t, nil)); len(cms) != 0 {
		t.Fatalf("a dashboard by default: %v", cms)
	}
	for _, tc := range []struct {
		name, namespace string
		values          map[string]any
	}{
		{"release namespace", namespace, vals("telemetry.grafanaDashboard.enabled", true)},
		{"the sidecar's namespace", "monitoring", vals("telemetry.grafanaDashboard.enabled", true, "telemetry.grafanaDashboard.namespace", "monitoring")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cms := dashboards(render(t, tc.values))
			if len(cms) != 1 {
				t.Fatalf("%d dashboard ConfigMaps, want 1", len(cms))
			}
			cm := cms[0]
			if cm.GetNamespace() != tc.namespace || cm.GetName() != fullname+"-dashboard" {
				t.Errorf("ConfigMap %s/%s", cm.GetNamespace(), cm.GetName())
			}
			text, _, _ := unstructured.NestedString(cm.Object, "data", "network-enforcer.json")
			var d struct {
				UID    string `json:"uid"`
				Title  string `json:"title"`
				Panels []struct {
					Type    string `json:"type"`
					Title   string `json:"title"`
					Targets []struct {
						Expr string `json:"expr"`
					} `json:"targets"`
				} `json:"panels"`
			}
			if err := json.Unmarshal([]byte(text), &d); err != nil {
				t.Fatalf("the dashboard is not JSON: %v", err)
			}
			if d.UID == "" || d.Title == "" {
				t.Errorf("dashboard uid %q, title %q", d.UID, d.Title)
			}
			var exprs []string
			for _, p := range d.Panels {
				if p.Type == "row" {
					continue
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				for _, q := range p.Targets {
					exprs = append(exprs, q.Expr)
				}
			}
			all := strings.Join(exprs, "\n")
			for _, metric := range []string{
				policydeniesconnector.MetricDenies,
				flowsource.MetricFlowsAccepted, flowsource.MetricFlowsDropped,
				learningprocessor.MetricDropped,
				k8swriterexporter.MetricWrites,
				violationprocessor.MetricObserved, violationprocessor.MetricBufferDropped, violationprocessor.MetricStatusWrites,
				enforcerextension.MetricReconciles,
			} {
				if !strings.Contains(all, metric) {
					t.Errorf("no panel queries %s", metric)
				}
			}
		})
	}
}

// dashboards are the ConfigMaps that Grafana's sidecar would load.
func dashboards(r *rendered) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, cm := range r.ofKind("ConfigMap") {
		if cm.GetLabels()["grafana_dashboard"] == "1" {
			out = append(out, cm)
		}
	}
	return out
}
