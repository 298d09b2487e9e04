package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// flowHop is one TLS setup of the flow source's hop.
type flowHop struct {
	name     string
	provider string
	mode     string
	values   map[string]any
	// The Secret of existingSecret mode: its namespace and name.
	secretNS, secretName string
	// The issuer of the hop's key pair in issuer and csi mode.
	issuerName, issuerKind string
	// The default collector's TLS mode; empty, the default (issuer).
	collectorMode string
}

// collector is the default collector's TLS mode in this setup.
func (h flowHop) collector() string {
	if h.collectorMode == "" {
		return "issuer"
	}
	return h.collectorMode
}

// issued is whether mode has cert-manager issue the key pair.
func issued(mode string) bool { return mode == "issuer" || mode == "csi" }

func (h flowHop) remote() bool { return h.mode == "existingSecret" && h.secretNS != namespace }

var flowHops = []flowHop{
	{name: "issuer", provider: "istio", mode: "issuer", issuerName: fullname + "-ca", issuerKind: "Issuer"},
	{name: "csi", provider: "istio", mode: "csi", issuerName: fullname + "-ca", issuerKind: "Issuer", collectorMode: "csi",
		values: vals("controller.provider.istio.tls.mode", "csi", "telemetry.default.tls.mode", "csi")},
	{name: "existingSecret", provider: "istio", mode: "existingSecret", secretNS: namespace, secretName: "otlp-server",
		values: vals("controller.provider.istio.tls.mode", "existingSecret",
			"controller.provider.istio.tls.existingSecret.name", "otlp-server",
			"controller.provider.istio.tls.existingSecret.clientName", "otlp-client")},
	{name: "insecure", provider: "istio", mode: "insecure",
		values: vals("controller.provider.istio.tls.mode", "insecure")},

	{name: "issuer", provider: "calico", mode: "issuer", issuerName: "goldmane-clients", issuerKind: "ClusterIssuer",
		values: vals("controller.provider.calico.tls.mode", "issuer",
			"controller.provider.calico.tls.issuer.name", "goldmane-clients",
			"controller.provider.calico.tls.issuer.kind", "ClusterIssuer")},
	// The default: a client certificate that cert-manager issues from Calico's CA.
	{name: "existingSecret", provider: "calico", mode: "existingSecret", secretNS: "tigera-operator", secretName: fullname + "-goldmane-client"},
	{name: "existingSecretHere", provider: "calico", mode: "existingSecret", secretNS: namespace, secretName: "goldmane-client",
		values: vals("controller.provider.calico.tls.existingSecret.namespace", "",
			"controller.provider.calico.tls.existingSecret.name", "goldmane-client",
			"controller.provider.calico.tls.calicoCA.issue", false)},

	{name: "issuer", provider: "cilium", mode: "issuer", issuerName: "hubble-clients", issuerKind: "ClusterIssuer",
		values: vals("controller.provider.cilium.tls.mode", "issuer",
			"controller.provider.cilium.tls.issuer.name", "hubble-clients",
			"controller.provider.cilium.tls.issuer.kind", "ClusterIssuer")},
	// The default: the client certificate that Cilium makes for Hubble Relay.
	{name: "csi", provider: "cilium", mode: "csi", issuerName: "hubble-clients", issuerKind: "ClusterIssuer",
		values: vals("controller.provider.cilium.tls.mode", "csi",
			"controller.provider.cilium.tls.issuer.name", "hubble-clients",
			"controller.provider.cilium.tls.issuer.kind", "ClusterIssuer")},
	{name: "existingSecret", provider: "cilium", mode: "existingSecret", secretNS: "kube-system", secretName: "hubble-relay-client-certs"}, //nolint:gosec // G101: a Secret's name, not a credential
	{name: "existingSecretHere", provider: "cilium", mode: "existingSecret", secretNS: namespace, secretName: "hubble-client",
		values: vals("controller.provider.cilium.tls.existingSecret.namespace", "",
			"controller.provider.cilium.tls.existingSecret.name", "hubble-client")},
	{name: "insecure", provider: "cilium", mode: "insecure",
		values: vals("controller.provider.cilium.tls.mode", "insecure")},
}

var strategies = map[string]map[string]any{
	"default":  nil,
	"external": vals("telemetry.collectorStrategy", "external", "telemetry.external.endpoint", "otel.example.com:4317"),
	"none":     vals("telemetry.collectorStrategy", "none"),
}

// TestMatrix renders every provider with every TLS mode that it allows and every
// collector strategy, and checks the objects, the collector configuration they
// carry, the server's verdict on each object (a dry run) and the built binary's
// verdict on each collector configuration.
func TestMatrix(t *testing.T) {
	for _, hop := range flowHops {
		for _, strategy := range []string{"default", "external", "none"} {
			t.Run(fmt.Sprintf("%s/%s/%s", hop.provider, hop.name, strategy), func(t *testing.T) {
				values := merge(merge(vals("controller.provider.name", hop.provider), hop.values), strategies[strategy])
				r := render(t, values)
				checkObjects(t, r, hop, strategy)
				checkEnforcerConfig(t, r, hop, strategy)
				checkRBAC(t, r, hop)
				checkIssuedVolumes(t, r, hop, strategy)
				checkNetworkPolicies(t, r, hop.provider, "network-enforcer", strategy)
				dryRun(t, r.objs)
				validateConfigs(t, r)
			})
		}
	}
}

// checkObjects: which objects a setup has, and which it must not have.
func checkObjects(t *testing.T, r *rendered, hop flowHop, strategy string) {
	t.Helper()
	istio := hop.provider == "istio"
	deploy := r.must(t, "Deployment", namespace, fullname)
	if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n != 2 {
		t.Errorf("enforcer replicas %d, want 2", n)
	}
	if sa, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName"); sa != fullname {
		t.Errorf("enforcer service account %q", sa)
	}
	r.must(t, "ServiceAccount", namespace, fullname)
	r.must(t, "ConfigMap", namespace, fullname+"-config")
	r.must(t, "Service", namespace, fullname+"-metrics")
	for _, vap := range []string{"networkenforcer-promote-label", "networkenforcer-proposal-owner"} {
		r.must(t, "ValidatingAdmissionPolicy", "", vap)
		r.must(t, "ValidatingAdmissionPolicyBinding", "", vap)
	}

	chartCA := (istio && issued(hop.mode)) || strategy == "default"
	// The Certificates of the hops in issuer mode (csi mode has none).
	flowsCert := issued(hop.mode) && hop.mode == "issuer"
	collectorCert := strategy == "default" && hop.collector() == "issuer"
	calicoCA := hop.provider == "calico" && hop.name == "existingSecret"
	present := map[string]bool{
		"ServiceAccount/" + namespace + "/" + fullname:                     true,
		"ConfigMap/" + namespace + "/" + fullname + "-config":              true,
		"Deployment/" + namespace + "/" + fullname:                         true,
		"Service/" + namespace + "/" + fullname + "-metrics":               true,
		"ClusterRole//" + fullname:                                         true,
		"ClusterRoleBinding//" + fullname:                                  true,
		"Role/" + namespace + "/" + fullname + "-leader-election":          true,
		"RoleBinding/" + namespace + "/" + fullname + "-leader-election":   true,
		"Role/default/" + fullname + "-api-server-endpoints":               true,
		"RoleBinding/default/" + fullname + "-api-server-endpoints":        true,
		"PodDisruptionBudget/" + namespace + "/" + fullname:                true,
		"PriorityLevelConfiguration//" + fullname:                          true,
		"FlowSchema//" + fullname:                                          true,
		"NetworkPolicy/" + namespace + "/" + fullname:                      true,
		"NetworkPolicy/" + namespace + "/" + fullname + "-collector":       strategy == "default",
		"NetworkPolicy/" + namespace + "/" + fullname + "-node-agent":      istio,
		"DaemonSet/" + namespace + "/" + fullname + "-node-agent":          istio,
		"ConfigMap/" + namespace + "/" + fullname + "-node-agent":          istio,
		"ServiceAccount/" + namespace + "/" + fullname + "-node-agent":     istio,
		"Service/" + namespace + "/" + fullname + "-otlp":                  istio,
		"Service/" + namespace + "/" + fullname + "-otlp-headless":         istio,
		"Deployment/" + namespace + "/" + fullname + "-collector":          strategy == "default",
		"ConfigMap/" + namespace + "/" + fullname + "-collector-config":    strategy == "default",
		"Service/" + namespace + "/" + fullname + "-collector":             strategy == "default",
		"Service/" + namespace + "/" + fullname + "-collector-metrics":     strategy == "default",
		"Issuer/" + namespace + "/" + fullname + "-selfsigned":             chartCA,
		"Certificate/" + namespace + "/" + fullname + "-ca":                chartCA,
		"Issuer/" + namespace + "/" + fullname + "-ca":                     chartCA,
		"Issuer/tigera-operator/" + fullname + "-calico-ca":                calicoCA,
		"Certificate/tigera-operator/" + fullname + "-goldmane-client":     calicoCA,
		"Certificate/" + namespace + "/" + fullname + "-otlp-server":       flowsCert && istio,
		"Certificate/" + namespace + "/" + fullname + "-node-agent-client": flowsCert && istio,
		"Certificate/" + namespace + "/" + fullname + "-flows-client":      flowsCert && !istio,
		"Certificate/" + namespace + "/" + fullname + "-collector-server":  collectorCert,
		"Certificate/" + namespace + "/" + fullname + "-events-client":     collectorCert,
	}
	if hop.remote() {
		present["Role/"+hop.secretNS+"/"+fullname+"-secret-reader"] = true
		present["RoleBinding/"+hop.secretNS+"/"+fullname+"-secret-reader"] = true
	}
	for key, want := range present {
		if _, have := r.index[key]; have != want {
			t.Errorf("%s rendered: %v, want %v", key, have, want)
		}
	}
	// Nothing else: no node agent of the other mode, no secret reader without a
	// Secret in another namespace, no CA that no hop uses.
	for key := range r.index {
		if !present[key] && !strings.HasPrefix(key, "ValidatingAdmissionPolicy") {
			t.Errorf("unexpected object %s", key)
		}
	}

	if c := r.get("Certificate", "tigera-operator", fullname+"-goldmane-client"); c != nil {
		if s, _, _ := unstructured.NestedString(c.Object, "spec", "secretName"); s != hop.secretName {
			t.Errorf("Goldmane client Certificate writes Secret %q, want %q", s, hop.secretName)
		}
		if s, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name"); s != fullname+"-calico-ca" {
			t.Errorf("Goldmane client Certificate issuer %q", s)
		}
		if u, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "usages"); !slices.Contains(u, "client auth") {
			t.Errorf("Goldmane client Certificate usages %v lack client auth", u)
		}
		iss := r.must(t, "Issuer", "tigera-operator", fullname+"-calico-ca")
		if s, _, _ := unstructured.NestedString(iss.Object, "spec", "ca", "secretName"); s != "tigera-ca-private" {
			t.Errorf("Calico CA Issuer reads Secret %q, want tigera-ca-private", s)
		}
	}
	if ca := r.get("Certificate", namespace, fullname+"-ca"); ca != nil {
		if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
			t.Error("the chart's CA Certificate is not a CA")
		}
		if s, _, _ := unstructured.NestedString(ca.Object, "spec", "issuerRef", "name"); s != fullname+"-selfsigned" {
			t.Errorf("the CA Certificate's issuer %q", s)
		}
		if s, _, _ := unstructured.NestedString(r.must(t, "Issuer", namespace, fullname+"-ca").Object, "spec", "ca", "secretName"); s != fullname+"-ca" {
			t.Errorf("the CA Issuer reads Secret %q", s)
		}
	}
}

// checkEnforcerConfig: the enforcer's collector configuration, by provider, TLS
// mode and strategy, and every file it names mounted from the right volume.
func checkEnforcerConfig(t *testing.T, r *rendered, hop flowHop, strategy string) {
	t.Helper()
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))

	if got := keysOf(cfg, "extensions"); !slices.Equal(got, []string{"enforcer", "health_check", "leader_elector", "policy_controller", "review"}) {
		t.Errorf("extensions %v", got)
	}
	// The review page on loopback: plain HTTP (kubectl port-forward is the
	// API server's TLS), tokens for the chart's audience.
	if review := at(cfg, "extensions", "review"); str(t, review, "endpoint") != "127.0.0.1:8090" || at(review, "tls") != nil ||
		str(t, review, "access", "audience") != "network-enforcer-review" {
		t.Errorf("review extension %v", review)
	}
	if str(t, cfg, "extensions", "enforcer", "auth_type") != "serviceAccount" {
		t.Errorf("enforcer extension %v", at(cfg, "extensions", "enforcer"))
	}
	if str(t, cfg, "extensions", "leader_elector", "auth_type") != "serviceAccount" ||
		str(t, cfg, "extensions", "leader_elector", "lease_name") != fullname ||
		str(t, cfg, "extensions", "leader_elector", "lease_namespace") != namespace {
		t.Errorf("leader elector %v", at(cfg, "extensions", "leader_elector"))
	}

	receiver := map[string]string{"istio": "ztunnel", "calico": "goldmane", "cilium": "hubble"}[hop.provider]
	if got := keysOf(cfg, "receivers"); !slices.Equal(got, []string{receiver}) {
		t.Fatalf("receivers %v, want [%s]", got, receiver)
	}
	flowsDir := "/etc/network-enforcer/tls/flows/"
	switch hop.provider {
	case "istio":
		for proto, endpoint := range map[string]string{"grpc": "0.0.0.0:4317", "http": "0.0.0.0:4318"} {
			l := at(cfg, "receivers", "ztunnel", "protocols", proto)
			if got := str(t, l, "endpoint"); got != endpoint {
				t.Errorf("ztunnel %s endpoint %s, want %s", proto, got, endpoint)
			}
			tls := at(l, "tls")
			if hop.mode == "insecure" {
				if tls != nil {
					t.Errorf("insecure ztunnel %s listener has tls %v", proto, tls)
				}
				continue
			}
			for _, k := range []string{"cert_file", "key_file", "client_ca_file"} {
				if f, _ := at(tls, k).(string); !strings.HasPrefix(f, flowsDir) {
					t.Errorf("ztunnel %s tls::%s = %q, want a file under %s (client certificates required)", proto, k, f, flowsDir)
				}
			}
		}
		// A standby refuses what node agents send, for them to retry with the leader.
		if str(t, cfg, "receivers", "ztunnel", "leader_elector") != "leader_elector" {
			t.Error("the ztunnel receiver is not gated by the leader elector")
		}
	default:
		rc := at(cfg, "receivers", receiver)
		if str(t, rc, "leader_elector") != "leader_elector" {
			t.Errorf("%s receiver is not gated by the leader elector", receiver)
		}
		wantEndpoint := map[string]string{"calico": "goldmane.calico-system.svc:7443", "cilium": "hubble-relay.kube-system.svc:443"}[hop.provider]
		// The hubble receiver's client settings are those of its mode: the
		// leader alone reads Hubble Relay.
		client := rc
		if hop.provider == "cilium" {
			if got := keysOf(rc); !slices.Equal(got, []string{"leader_elector", "relay"}) {
				t.Errorf("hubble receiver keys %v, want relay mode and the leader elector", got)
			}
			client = at(rc, "relay")
			if hop.mode == "insecure" {
				wantEndpoint = "hubble-relay.kube-system.svc:80"
			}
		}
		if got := str(t, client, "endpoint"); got != wantEndpoint {
			t.Errorf("%s endpoint %s, want %s", receiver, got, wantEndpoint)
		}
		tls, _ := at(client, "tls").(map[string]any)
		switch {
		case hop.mode == "insecure":
			if len(tls) != 1 || tls["insecure"] != true {
				t.Errorf("insecure %s tls %v, want only insecure: true", receiver, tls)
			}
		case hop.remote():
			for k, key := range map[string]string{"ca_pem": "ca.crt", "cert_pem": "tls.crt", "key_pem": "tls.key"} {
				want := fmt.Sprintf("${secret:%s/%s/%s}", hop.secretNS, hop.secretName, key)
				if tls[k] != want {
					t.Errorf("%s tls::%s = %v, want %s", receiver, k, tls[k], want)
				}
			}
			for k := range tls {
				if strings.HasSuffix(k, "_file") {
					t.Errorf("%s tls::%s set with a Secret read by name", receiver, k)
				}
			}
		default:
			for _, k := range []string{"ca_file", "cert_file", "key_file"} {
				if f, _ := tls[k].(string); !strings.HasPrefix(f, flowsDir) {
					t.Errorf("%s tls::%s = %q, want a file under %s", receiver, k, f, flowsDir)
				}
			}
		}
		if hop.provider == "cilium" && hop.mode != "insecure" && tls["server_name_override"] != "ui.hubble-relay.cilium.io" {
			t.Errorf("hubble tls::server_name_override %v", tls["server_name_override"])
		}
	}

	if got := keysOf(cfg, "processors"); !slices.Equal(got, []string{"learning", "memory_limiter", "violation"}) {
		t.Errorf("processors %v", got)
	}
	wantLearning := "map[ipv4_prefix:32 ipv6_prefix:128 outside_peers:drop]"
	if hop.provider == "cilium" {
		wantLearning = "map[cilium_backend:kubernetes ipv4_prefix:32 ipv6_prefix:128 outside_peers:drop]"
	}
	if l := at(cfg, "processors", "learning"); fmt.Sprint(l) != wantLearning {
		t.Errorf("learning processor %v", l)
	}
	if dp := str(t, cfg, "extensions", "enforcer", "data_plane"); dp != hop.provider {
		t.Errorf("enforcer data_plane %q, want the provider %q", dp, hop.provider)
	}
	if str(t, cfg, "processors", "violation", "status_sync_interval") != "30s" {
		t.Errorf("violation processor %v", at(cfg, "processors", "violation"))
	}
	if got := keysOf(cfg, "connectors"); !slices.Equal(got, []string{"forward/violations"}) {
		t.Errorf("connectors %v", got)
	}

	events := map[string]string{"default": "otlp_grpc/events", "external": "otlp_grpc/events", "none": "nop"}[strategy]
	if got := keysOf(cfg, "exporters"); !slices.Equal(got, []string{"k8swriter", events}) {
		t.Errorf("exporters %v, want [k8swriter %s]", got, events)
	}
	switch strategy {
	case "default":
		if got := str(t, cfg, "exporters", events, "endpoint"); got != fullname+"-collector."+namespace+".svc:4317" {
			t.Errorf("events endpoint %s", got)
		}
		if got := str(t, cfg, "exporters", events, "tls", "ca_file"); got != "/etc/network-enforcer/tls/events/ca.crt" {
			t.Errorf("events CA %s", got)
		}
		if at(cfg, "exporters", events, "tls", "insecure") != nil {
			t.Error("the default collector's hop is not TLS")
		}
	case "external":
		if got := str(t, cfg, "exporters", events, "endpoint"); got != "otel.example.com:4317" {
			t.Errorf("events endpoint %s", got)
		}
	}

	pipelines := map[string][3][]string{
		"logs/flows":  {{receiver}, {"memory_limiter", "learning"}, {"k8swriter", "forward/violations"}},
		"logs/events": {{"forward/violations"}, {"violation"}, {events, "k8swriter"}},
	}
	if got := keysOf(cfg, "service", "pipelines"); !slices.Equal(got, []string{"logs/events", "logs/flows"}) {
		t.Errorf("pipelines %v", got)
	}
	for name, want := range pipelines {
		p := at(cfg, "service", "pipelines", name)
		for i, part := range []string{"receivers", "processors", "exporters"} {
			if got := list(p, part); !slices.Equal(got, want[i]) {
				t.Errorf("%s %s %v, want %v", name, part, got, want[i])
			}
		}
	}
	if got := list(cfg, "service", "extensions"); !slices.Equal(got, []string{"health_check", "leader_elector", "enforcer", "policy_controller", "review"}) {
		t.Errorf("service extensions %v", got)
	}
	if got := at(cfg, "service", "telemetry", "metrics", "readers"); got == nil {
		t.Error("the collector's metrics are not exposed for scraping")
	}

	// Every file the configuration names is in a volume of the enforcer's pod:
	// a CSI volume for an issuer, a Secret for an existing Secret.
	spec := podSpec(t, r.must(t, "Deployment", namespace, fullname))
	files := map[string]string{}
	fileValues(cfg, "", files)
	for key, path := range files {
		vol := volumeFor(t, spec, path)
		if vol == nil {
			t.Errorf("%s = %s is in no volume of the enforcer's pod", key, path)
			continue
		}
		if strings.HasPrefix(path, flowsDir) {
			wantSource := map[string]string{"issuer": "secret", "csi": "csi", "existingSecret": "secret"}[hop.mode]
			if vol[wantSource] == nil {
				t.Errorf("%s = %s: volume %v, want a %s volume", key, path, vol, wantSource)
			}
			if hop.mode == "existingSecret" && at(vol, "secret", "secretName") != hop.secretName {
				t.Errorf("flows volume mounts Secret %v, want %s", at(vol, "secret", "secretName"), hop.secretName)
			}
		}
	}
	if _, mounted := volumes(spec)["flows-tls"]; mounted != (issued(hop.mode) || (hop.mode == "existingSecret" && !hop.remote())) {
		t.Errorf("flows-tls volume mounted: %v (mode %s, Secret in %s)", mounted, hop.mode, hop.secretNS)
	}
}

// checkRBAC: least privilege. The shared cache's kinds read (list and watch)
// but no write to them, no Secret in the ClusterRole, Secrets by name only,
// the Lease by name.
func checkRBAC(t *testing.T, r *rendered, hop flowHop) {
	t.Helper()
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "*"}
	cr := r.must(t, "ClusterRole", "", fullname)
	rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	apWrites, cnpWrites := false, false
	// cached are the verbs on each kind that the enforcer's informers watch.
	cached := map[string][]string{"pods": nil, "namespaces": nil, "replicasets": nil, "deployments": nil, "statefulsets": nil,
		"daemonsets": nil, "controllerrevisions": nil, "jobs": nil, "cronjobs": nil}
	for _, rule := range rules {
		resources := list(rule, "resources")
		verbs := list(rule, "verbs")
		for _, res := range resources {
			switch res {
			case "pods", "namespaces", "replicasets", "deployments", "statefulsets", "daemonsets", "controllerrevisions", "jobs", "cronjobs":
				cached[res] = append(cached[res], verbs...)
				for _, v := range verbs {
					// A policy's revisions are ControllerRevisions that the
					// enforcer creates and prunes (TestPolicyRevisionsRBAC).
					if slices.Contains(writes, v) && (res != "controllerrevisions" || (v != "create" && v != "delete")) {
						t.Errorf("ClusterRole may %s %s", v, res)
					}
				}
			case "secrets", "*":
				t.Errorf("ClusterRole names %s", res)
			case "authorizationpolicies", "ciliumnetworkpolicies":
				if res == "authorizationpolicies" {
					apWrites = apWrites || slices.Contains(verbs, "create")
				} else {
					cnpWrites = cnpWrites || slices.Contains(verbs, "create")
				}
				for _, v := range []string{"get", "list", "watch"} {
					if !slices.Contains(verbs, v) {
						t.Errorf("%s lack %s: the enforcer watches them whenever the cluster serves them", res, v)
					}
				}
			}
		}
		if slices.Contains(list(rule, "apiGroups"), "*") {
			t.Errorf("ClusterRole rule for every API group: %v", rule)
		}
	}
	for res, verbs := range cached {
		if !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") {
			t.Errorf("ClusterRole may not list and watch %s (%v): the shared cache watches them", res, verbs)
		}
	}
	if apWrites != (hop.provider == "istio") {
		t.Errorf("AuthorizationPolicy writes allowed: %v, want only with istio", apWrites)
	}
	// The chart's default Cilium backend is kubernetes: no CiliumNetworkPolicy
	// is written (TestCiliumBackendMayWriteCiliumNetworkPolicies for cilium).
	if cnpWrites {
		t.Errorf("CiliumNetworkPolicy writes allowed with the %s provider's defaults", hop.provider)
	}

	for _, role := range r.ofKind("Role") {
		roleRules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, rule := range roleRules {
			if slices.Contains(list(rule, "resources"), "secrets") {
				if !slices.Equal(list(rule, "verbs"), []string{"get"}) || !slices.Equal(list(rule, "resourceNames"), []string{hop.secretName}) ||
					role.GetNamespace() != hop.secretNS {
					t.Errorf("Role %s/%s on Secrets: %v", role.GetNamespace(), role.GetName(), rule)
				}
			}
		}
	}
	le := r.must(t, "Role", namespace, fullname+"-leader-election")
	rules, _, _ = unstructured.NestedSlice(le.Object, "rules")
	// Creating a Lease cannot be limited to a name; reading and renewing are.
	if len(rules) != 2 || !slices.Equal(list(rules[0], "resources"), []string{"leases"}) || !slices.Equal(list(rules[0], "verbs"), []string{"create"}) ||
		len(list(rules[0], "resourceNames")) != 0 ||
		!slices.Equal(list(rules[1], "resources"), []string{"leases"}) || !slices.Equal(list(rules[1], "verbs"), []string{"get", "update"}) ||
		!slices.Equal(list(rules[1], "resourceNames"), []string{fullname}) {
		t.Errorf("leader election Role: %v", rules)
	}
	// The API server's EndpointSlices, read where they are and nowhere else.
	ep := r.must(t, "Role", "default", fullname+"-api-server-endpoints")
	rules, _, _ = unstructured.NestedSlice(ep.Object, "rules")
	if len(rules) != 1 || !slices.Equal(list(rules[0], "resources"), []string{"endpointslices"}) ||
		!slices.Equal(list(rules[0], "verbs"), []string{"get", "list", "watch"}) {
		t.Errorf("API server endpoints Role: %v", rules)
	}
	for _, rb := range append(r.ofKind("RoleBinding"), r.ofKind("ClusterRoleBinding")...) {
		subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
		if len(subjects) != 1 || at(subjects[0], "name") != fullname || at(subjects[0], "namespace") != namespace {
			t.Errorf("%s %s binds %v", rb.GetKind(), rb.GetName(), subjects)
		}
	}
}

// checkIssuedVolumes: the pods' volumes whose key pairs cert-manager issues,
// exactly those of the hops in issuer or csi mode: in issuer mode the Secret
// of a Certificate of the release from the hop's issuer, in csi mode cert-
// manager's CSI driver asked for a key pair from that issuer.
func checkIssuedVolumes(t *testing.T, r *rendered, hop flowHop, strategy string) {
	t.Helper()
	want := map[string]string{} // workload/volume -> mode:issuer
	chartCA := fullname + "-ca"
	if issued(hop.mode) {
		want["Deployment/"+fullname+"/flows-tls"] = hop.mode + ":" + hop.issuerName
		if hop.provider == "istio" {
			want["DaemonSet/"+fullname+"-node-agent/client-tls"] = hop.mode + ":" + hop.issuerName
		}
	}
	if strategy == "default" {
		want["Deployment/"+fullname+"/events-tls"] = hop.collector() + ":" + chartCA
		want["Deployment/"+fullname+"-collector/server-tls"] = hop.collector() + ":" + chartCA
	}
	certs := map[string]*unstructured.Unstructured{} // Secret -> Certificate
	for _, c := range r.ofKind("Certificate") {
		if c.GetNamespace() == namespace {
			name, _, _ := unstructured.NestedString(c.Object, "spec", "secretName")
			certs[name] = c
		}
	}
	got := map[string]string{}
	for _, o := range append(r.ofKind("Deployment"), r.ofKind("DaemonSet")...) {
		for name, vol := range volumes(podSpec(t, o)) {
			key := o.GetKind() + "/" + o.GetName() + "/" + name
			if secret, ok := at(vol, "secret", "secretName").(string); ok && certs[secret] != nil {
				c := certs[secret]
				issuer, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "name")
				kind, _, _ := unstructured.NestedString(c.Object, "spec", "issuerRef", "kind")
				got[key] = "issuer:" + issuer
				if hop.issuerKind != "" && issuer == hop.issuerName && kind != hop.issuerKind {
					t.Errorf("%s: issuer kind %v, want %s", key, kind, hop.issuerKind)
				}
				if u, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "usages"); len(u) != 3 {
					t.Errorf("%s: Certificate usages %v", key, u)
				}
				continue
			}
			csi, ok := vol["csi"].(map[string]any)
			if !ok {
				continue
			}
			issuer, _ := at(csi, "volumeAttributes", "csi.cert-manager.io/issuer-name").(string)
			got[key] = "csi:" + issuer
			if csi["driver"] != "csi.cert-manager.io" || csi["readOnly"] != true {
				t.Errorf("%s: CSI volume %v", key, csi)
			}
			attrs, _ := csi["volumeAttributes"].(map[string]any)
			for _, a := range []string{"issuer-kind", "common-name", "key-usages", "certificate-file", "privatekey-file", "ca-file"} {
				if attrs["csi.cert-manager.io/"+a] == nil {
					t.Errorf("%s: no csi.cert-manager.io/%s", key, a)
				}
			}
			if hop.issuerKind != "" && issuer == hop.issuerName && attrs["csi.cert-manager.io/issuer-kind"] != hop.issuerKind {
				t.Errorf("%s: issuer kind %v, want %s", key, attrs["csi.cert-manager.io/issuer-kind"], hop.issuerKind)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("issued key pairs (volume: mode:issuer)\n got %v\nwant %v", got, want)
	}
}
