package chart

import (
	"testing"
)

// TestGCSettings: the enforcer runs with the chart's GOGC and a GOMEMLIMIT at
// memLimitPercent of its memory limit; each is left out when turned off, and
// GOMEMLIMIT when the limit is not in Mi or Gi.
func TestGCSettings(t *testing.T) {
	for _, tc := range []struct {
		name             string
		values           map[string]any
		gogc, gomemlimit string
	}{
		{"defaults", nil, "400", "512MiB"},
		{"Mi", vals("controller.resources.limits.memory", "1500Mi", "controller.gc.memLimitPercent", 40), "400", "600MiB"},
		{"off", vals("controller.gc.goGC", 0, "controller.gc.memLimitPercent", 0), "", ""},
		{"other units", vals("controller.resources.limits.memory", "1G"), "400", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, merge(vals("controller.provider.name", "cilium"), tc.values))
			spec := podSpec(t, r.must(t, "Deployment", namespace, fullname))
			env := map[string]string{}
			for _, e := range at(spec["containers"].([]any)[0], "env").([]any) {
				if v, ok := e.(map[string]any)["value"].(string); ok {
					env[e.(map[string]any)["name"].(string)] = v
				}
			}
			if env["GOGC"] != tc.gogc || env["GOMEMLIMIT"] != tc.gomemlimit {
				t.Fatalf("GOGC %q GOMEMLIMIT %q, want %q and %q", env["GOGC"], env["GOMEMLIMIT"], tc.gogc, tc.gomemlimit)
			}
		})
	}
}
