package chart

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// anySource stands for a rule without from or to: every peer.
const anySource = "any"

// checkNetworkPolicies: one ingress policy for each of the chart's workloads,
// selecting exactly that workload's pods; the rules are exactly the intended
// ones (node agent → enforcer OTLP, enforcer → collector OTLP, metrics from
// every pod of the cluster, health from any source); every probe's port is
// open to any source, so the kubelet's probes pass; no egress by default.
func checkNetworkPolicies(t *testing.T, r *rendered, provider, agentMode, strategy string) {
	t.Helper()
	agent := map[string]string{"fluent-bit": "DaemonSet/" + fullname + "-fluent-bit", "network-enforcer": "DaemonSet/" + fullname + "-node-agent"}[agentMode]
	enforcer := "Deployment/" + fullname
	collector := "Deployment/" + fullname + "-collector"
	allPods := `[{"namespaceSelector":{}}]`
	want := map[string][]string{ // workload -> rules
		enforcer: {"TCP/13133 <- " + anySource, "TCP/8888 <- " + allPods},
	}
	if provider == "istio" && agent != "" {
		port := map[string]string{"fluent-bit": "4318", "network-enforcer": "4317"}[agentMode]
		want[enforcer] = append(want[enforcer], "TCP/"+port+" <- pods of ["+agent+"]")
		want[agent] = []string{"TCP/" + map[string]string{"fluent-bit": "2020", "network-enforcer": "13133"}[agentMode] + " <- " + anySource}
	}
	if strategy == "default" {
		want[collector] = []string{"TCP/13133 <- " + anySource, "TCP/9464 <- " + allPods, "TCP/4317 <- pods of [" + enforcer + "]"}
	}
	got := map[string][]string{}
	for _, np := range r.ofKind("NetworkPolicy") {
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		w := selected(r, sel)
		if len(w) != 1 || len(sel) == 0 {
			t.Errorf("NetworkPolicy %s selects %v (labels %v), want exactly one of the chart's workloads", np.GetName(), w, sel)
			continue
		}
		if name := strings.SplitN(w[0], "/", 2)[1]; name != np.GetName() {
			t.Errorf("NetworkPolicy %s selects %s", np.GetName(), w[0])
		}
		if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !slices.Equal(types, []string{"Ingress"}) {
			t.Errorf("NetworkPolicy %s policyTypes %v, want [Ingress]", np.GetName(), types)
		}
		if at(np.Object, "spec", "egress") != nil {
			t.Errorf("NetworkPolicy %s restricts egress by default", np.GetName())
		}
		got[w[0]] = rules(t, r, np, "ingress", "from")
	}
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
		t.Errorf("NetworkPolicy ingress rules\n got %v\nwant %v", sorted(got), sorted(want))
	}
	// Every probe's port is open to any source.
	for _, o := range append(r.ofKind("Deployment"), r.ofKind("DaemonSet")...) {
		key := o.GetKind() + "/" + o.GetName()
		for _, port := range probePorts(t, o) {
			if !contains(got[key], "TCP/"+port+" <- "+anySource) {
				t.Errorf("%s: the probes' port %s is not open to any source: %v", key, port, got[key])
			}
		}
	}
}

// rules describes each rule of a policy's ingress or egress as "TCP/port,... <-
// peers": peers is "any", "pods of [workloads]" for a podSelector alone (the
// workloads it selects), or the peers as JSON.
func rules(t *testing.T, r *rendered, np *unstructured.Unstructured, kind, peersKey string) []string {
	t.Helper()
	l, _, _ := unstructured.NestedSlice(np.Object, "spec", kind)
	var out []string
	for _, rule := range l {
		var ports []string
		for _, p := range at(rule, "ports").([]any) {
			ports = append(ports, fmt.Sprintf("%v/%v", at(p, "protocol"), at(p, "port")))
		}
		peers, _ := at(rule, peersKey).([]any)
		desc := anySource
		switch {
		case len(peers) == 1 && len(peers[0].(map[string]any)) == 1 && at(peers[0], "podSelector") != nil:
			sel := map[string]string{}
			for k, v := range at(peers[0], "podSelector", "matchLabels").(map[string]any) {
				sel[k] = v.(string)
			}
			desc = fmt.Sprintf("pods of %v", selected(r, sel))
		case len(peers) > 0:
			b, _ := json.Marshal(peers)
			desc = string(b)
		}
		out = append(out, strings.Join(ports, ",")+" <- "+desc)
	}
	return out
}

// probePorts: the container port numbers that a workload's probes use.
func probePorts(t *testing.T, o *unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	cs, _ := podSpec(t, o)["containers"].([]any)
	for _, c := range cs {
		named := map[string]string{}
		ports, _ := at(c, "ports").([]any)
		for _, p := range ports {
			named[fmt.Sprint(at(p, "name"))] = fmt.Sprint(at(p, "containerPort"))
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
			port := at(c, probe, "httpGet", "port")
			if port == nil {
				continue
			}
			if n, ok := named[fmt.Sprint(port)]; ok {
				out = append(out, n)
			} else {
				out = append(out, fmt.Sprint(port))
			}
		}
	}
	return out
}

func sorted(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		v = append([]string(nil), v...)
		sort.Strings(v)
		out[k] = v
	}
	return out
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

// TestNetworkPolicyNodeAgents: the enforcer's OTLP port is open to exactly the
// node agent of the mode that the chart deploys, on the port it sends to; with
// no node agent, to the peers of otlpFrom only.
func TestNetworkPolicyNodeAgents(t *testing.T) {
	for _, mode := range []string{"fluent-bit", "network-enforcer"} {
		t.Run(mode, func(t *testing.T) {
			r := render(t, vals("nodeAgent.mode", mode))
			checkNetworkPolicies(t, r, "istio", mode, "default")
			dryRun(t, r.objs)
		})
	}
	t.Run("none", func(t *testing.T) {
		r := render(t, vals("nodeAgent.mode", "none"))
		checkNetworkPolicies(t, r, "istio", "", "default")
		peer := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "senders"}}}
		r = render(t, vals("nodeAgent.mode", "none", "networkPolicy.otlpFrom", []any{peer}))
		got := rules(t, r, r.must(t, "NetworkPolicy", namespace, fullname), "ingress", "from")
		if want := `TCP/4317,TCP/4318 <- [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"senders"}}}]`; !contains(got, want) {
			t.Errorf("otlpFrom: rules %v, want %s", got, want)
		}
		dryRun(t, r.objs)
	})
}

// TestNetworkPolicyOptions: metricsFrom narrows both metrics ports; [] opens
// them; off renders no policy.
func TestNetworkPolicyOptions(t *testing.T) {
	prom := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}},
		"podSelector":       map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "prometheus"}},
	}
	r := render(t, vals("networkPolicy.metricsFrom", []any{prom}))
	wantProm := `[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}},"podSelector":{"matchLabels":{"app.kubernetes.io/name":"prometheus"}}}]`
	for name, port := range map[string]string{fullname: "8888", fullname + "-collector": "9464"} {
		if got := rules(t, r, r.must(t, "NetworkPolicy", namespace, name), "ingress", "from"); !contains(got, "TCP/"+port+" <- "+wantProm) {
			t.Errorf("%s rules %v", name, got)
		}
	}
	dryRun(t, r.objs)

	r = render(t, vals("networkPolicy.metricsFrom", []any{}))
	if got := rules(t, r, r.must(t, "NetworkPolicy", namespace, fullname), "ingress", "from"); !contains(got, "TCP/8888 <- "+anySource) {
		t.Errorf("metricsFrom []: rules %v", got)
	}

	r = render(t, vals("networkPolicy.enabled", false))
	if n := len(r.ofKind("NetworkPolicy")); n != 0 {
		t.Errorf("%d NetworkPolicies rendered while off", n)
	}
}

// TestNetworkPolicyEgress: with egress restricted, the enforcer may reach DNS,
// the API server's addresses, its provider's flow source and the default
// collector, and nothing else; each policy is accepted by the API server.
func TestNetworkPolicyEgress(t *testing.T) {
	dns := `[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"kube-system"}},"podSelector":{"matchLabels":{"k8s-app":"kube-dns"}}}]`
	api := `TCP/443,TCP/6443 <- [{"ipBlock":{"cidr":"10.0.0.1/32"}},{"ipBlock":{"cidr":"fd00::1/128"}}]`
	flows := func(ns, app string) string {
		return fmt.Sprintf(`[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}},"podSelector":{"matchLabels":{"k8s-app":%q}}}]`, ns, app)
	}
	ext := map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "192.0.2.0/24"}}},
		"ports": []any{map[string]any{"protocol": "TCP", "port": 4317}}}
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"istio", nil, []string{"TCP/4317 <- pods of [Deployment/" + fullname + "-collector]"}},
		{"calico", vals("controller.provider.name", "calico"), []string{"TCP/7443 <- " + flows("calico-system", "goldmane"),
			"TCP/4317 <- pods of [Deployment/" + fullname + "-collector]"}},
		{"cilium", vals("controller.provider.name", "cilium", "telemetry.collectorStrategy", "none"),
			[]string{"TCP/4245 <- " + flows("kube-system", "hubble-relay")}},
		{"cilium elsewhere", vals("controller.provider.name", "cilium", "controller.provider.cilium.endpoint", "hubble-relay.cilium.svc:443",
			"telemetry.collectorStrategy", "none"), []string{"TCP/4245 <- " + flows("cilium", "hubble-relay")}},
		{"external", vals("telemetry.collectorStrategy", "external", "telemetry.external.endpoint", "otel.example.com:4317",
			"networkPolicy.egress.extraRules", []any{ext}), []string{`TCP/4317 <- [{"ipBlock":{"cidr":"192.0.2.0/24"}}]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := merge(vals("networkPolicy.egress.enabled", true,
				"networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1/32", "fd00::1/128"}), tc.values)
			r := render(t, values)
			np := r.must(t, "NetworkPolicy", namespace, fullname)
			if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !slices.Equal(types, []string{"Ingress", "Egress"}) {
				t.Errorf("policyTypes %v", types)
			}
			want := append([]string{"UDP/53,TCP/53 <- " + dns, api}, tc.want...)
			if got := rules(t, r, np, "egress", "to"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("egress rules\n got %v\nwant %v", got, want)
			}
			for _, other := range r.ofKind("NetworkPolicy") {
				if other.GetName() != fullname && at(other.Object, "spec", "egress") != nil {
					t.Errorf("%s restricts egress", other.GetName())
				}
			}
			dryRun(t, r.objs)
		})
	}
}
