package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/internal/charttest"
)

// accepted renders values and checks that the API server and the binary accept
// what the release holds.
func accepted(t *testing.T, values map[string]any) *rendered {
	t.Helper()
	r := render(t, values)
	dryRun(t, r.objs)
	validateConfigs(t, r)
	return r
}

// fluentBitSections parses fluent-bit's classic configuration: each section's
// name and its keys (lower case) with their values.
func fluentBitSections(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	sections := map[string]map[string]string{}
	var current map[string]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			name := strings.Trim(line, "[]")
			if _, dup := sections[name]; dup {
				t.Fatalf("two [%s] sections", name)
			}
			current = map[string]string{}
			sections[name] = current
		default:
			if current == nil {
				t.Fatalf("a key outside a section: %q", line)
			}
			k, v, _ := strings.Cut(line, " ")
			current[strings.ToLower(k)] = strings.TrimSpace(v)
		}
	}
	return sections
}

// TestFluentBit: with Istio, fluent-bit tails ztunnel's CRI logs and sends OTLP
// over HTTP, with a client certificate unless insecure, to the enforcer's
// OTLP/HTTP listener.
func TestFluentBit(t *testing.T) {
	host := fullname + "-otlp." + namespace + ".svc"
	for _, tc := range []struct {
		name   string
		values map[string]any
		mode   string
	}{
		{"issuer", nil, "issuer"},
		{"csi", vals("controller.provider.istio.tls.mode", "csi"), "csi"},
		{"existingSecret", vals("controller.provider.istio.tls.mode", "existingSecret",
			"controller.provider.istio.tls.existingSecret.name", "otlp-server",
			"controller.provider.istio.tls.existingSecret.clientName", "otlp-client"), "existingSecret"},
		{"insecure", vals("controller.provider.istio.tls.mode", "insecure"), "insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := accepted(t, merge(vals("nodeAgent.mode", "fluent-bit"), tc.values))
			ds := r.must(t, "DaemonSet", namespace, fullname+"-fluent-bit")
			spec := podSpec(t, ds)
			image := at(spec["containers"].([]any)[0], "image").(string)
			if !regexp.MustCompile(`^cr\.fluentbit\.io/fluent/fluent-bit:4\.\d+\.\d+$`).MatchString(image) {
				t.Errorf("fluent-bit image %s, want a pinned 4.x tag of the upstream image", image)
			}
			if spec["automountServiceAccountToken"] != false {
				t.Error("fluent-bit gets a service account token it does not use")
			}
			text, _, _ := unstructured.NestedString(r.must(t, "ConfigMap", namespace, fullname+"-fluent-bit").Object, "data", "fluent-bit.conf")
			s := fluentBitSections(t, text)
			in, out := s["INPUT"], s["OUTPUT"]
			if in["name"] != "tail" || in["multiline.parser"] != "cri" ||
				in["path"] != "/var/log/pods/istio-system_ztunnel-*/istio-proxy/*.log" {
				t.Errorf("input %v", in)
			}
			if out["name"] != "opentelemetry" || out["host"] != host || out["port"] != "4318" || out["logs_uri"] != "/v1/logs" {
				t.Errorf("output %v", out)
			}
			// A new connection per flush: the Service sends a retry of what a
			// standby refused to another pod.
			if out["net.keepalive"] != "off" {
				t.Errorf("output keeps its connection: net.keepalive %q", out["net.keepalive"])
			}
			if !strings.HasPrefix(out["match"], "ztunnel.") || !strings.HasPrefix(in["tag"], "ztunnel.") {
				t.Errorf("input tag %q, output match %q", in["tag"], out["match"])
			}
			mountedFiles := []string{in["db"]}
			if tc.mode == "insecure" {
				if out["tls"] != "" {
					t.Errorf("insecure output has tls %q", out["tls"])
				}
			} else {
				if out["tls"] != "On" || out["tls.verify"] != "On" || out["tls.verify_hostname"] != "On" || out["tls.vhost"] != host {
					t.Errorf("output TLS %v", out)
				}
				for _, k := range []string{"tls.ca_file", "tls.crt_file", "tls.key_file"} {
					if out[k] == "" {
						t.Errorf("output has no %s: no client certificate", k)
					}
					mountedFiles = append(mountedFiles, out[k])
				}
			}
			for _, f := range mountedFiles {
				vol := volumeFor(t, spec, f)
				if vol == nil {
					t.Errorf("%s is in no volume of fluent-bit's pod", f)
					continue
				}
				if strings.HasSuffix(f, ".db") && at(vol, "hostPath", "type") != "DirectoryOrCreate" {
					t.Errorf("fluent-bit's offsets are not kept on the node: %v", vol)
				}
				if strings.HasPrefix(f, "/etc/network-enforcer/tls/") {
					want := map[string]string{"issuer": "secret", "csi": "csi", "existingSecret": "secret"}[tc.mode]
					if vol[want] == nil {
						t.Errorf("%s: volume %v, want %s", f, vol, want)
					}
				}
			}
			if volumeFor(t, spec, strings.TrimSuffix(in["path"], "*/istio-proxy/*.log")+"x/y.log") == nil {
				t.Error("the node's pod logs are not mounted")
			}
			// The enforcer listens for fluent-bit on OTLP/HTTP, behind the Service.
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
			if got := str(t, cfg, "receivers", "ztunnel", "protocols", "http", "endpoint"); got != "0.0.0.0:4318" {
				t.Errorf("ztunnel http listener %s", got)
			}
			svc := r.must(t, "Service", namespace, fullname+"-otlp")
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			var got []string
			for _, p := range ports {
				got = append(got, fmt.Sprintf("%v:%v", at(p, "name"), at(p, "port")))
			}
			if !slices.Equal(got, []string{"otlp-grpc:4317", "otlp-http:4318"}) {
				t.Errorf("OTLP Service ports %v", got)
			}
		})
	}
}

// TestNodeAgentNetworkEnforcer: by default this binary is the node agent, not
// fluent-bit: the ztunnel receiver's file input with its
// offsets on the node, and OTLP/gRPC with a client certificate to the enforcer.
func TestNodeAgentNetworkEnforcer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		mode   string
	}{
		{"issuer", nil, "issuer"},
		{"csi", vals("controller.provider.istio.tls.mode", "csi"), "csi"},
		{"existingSecret", vals("controller.provider.istio.tls.mode", "existingSecret",
			"controller.provider.istio.tls.existingSecret.name", "otlp-server",
			"controller.provider.istio.tls.existingSecret.clientName", "otlp-client"), "existingSecret"},
		{"insecure", vals("controller.provider.istio.tls.mode", "insecure"), "insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := accepted(t, tc.values)
			if r.get("DaemonSet", namespace, fullname+"-fluent-bit") != nil {
				t.Error("fluent-bit runs beside the network-enforcer node agent")
			}
			ds := r.must(t, "DaemonSet", namespace, fullname+"-node-agent")
			spec := podSpec(t, ds)
			if image := at(spec["containers"].([]any)[0], "image"); image != "ghcr.io/kubewarden/network-enforcer:0.4.0-dev" {
				t.Errorf("node agent image %v", image)
			}
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-node-agent"))
			file := at(cfg, "receivers", "ztunnel", "file")
			if !slices.Equal(list(file, "include"), []string{"/var/log/pods/istio-system_ztunnel-*/istio-proxy/*.log"}) ||
				str(t, file, "start_at") != "end" || str(t, file, "storage") != "file_storage/ztunnel" {
				t.Errorf("ztunnel file input %v", file)
			}
			if at(cfg, "receivers", "ztunnel", "protocols") != nil {
				t.Error("the node agent listens for OTLP")
			}
			dir := str(t, cfg, "extensions", "file_storage/ztunnel", "directory")
			if vol := volumeFor(t, spec, dir+"/x"); vol == nil || at(vol, "hostPath", "type") != "DirectoryOrCreate" {
				t.Errorf("the offsets folder %s is not on the node: %v", dir, vol)
			}
			if !slices.Equal(list(cfg, "service", "extensions"), []string{"health_check", "file_storage/ztunnel"}) {
				t.Errorf("service extensions %v", list(cfg, "service", "extensions"))
			}
			exp := at(cfg, "exporters", "otlp_grpc")
			// Every enforcer pod through the headless Service, requests balanced
			// over them, so that what a standby refuses is retried on the leader.
			if got := str(t, exp, "endpoint"); got != "dns:///"+fullname+"-otlp-headless."+namespace+".svc:4317" ||
				str(t, exp, "balancer_name") != "round_robin" {
				t.Errorf("node agent exports to %s with %v", got, at(exp, "balancer_name"))
			}
			// A retry that draws the standby again comes within a second, and
			// none is ever dropped for its age.
			if retry := at(exp, "retry_on_failure"); at(retry, "enabled") != true || at(retry, "max_interval") != "1s" || at(retry, "max_elapsed_time") != "0s" {
				t.Errorf("node agent retries %v, want every second at most and without end", retry)
			}
			if ip, _, _ := unstructured.NestedString(r.must(t, "Service", namespace, fullname+"-otlp-headless").Object, "spec", "clusterIP"); ip != "None" {
				t.Errorf("the node agents' Service has clusterIP %q, want a headless Service", ip)
			}
			tls, _ := at(exp, "tls").(map[string]any)
			if tc.mode == "insecure" {
				if tls["insecure"] != true {
					t.Errorf("insecure node agent tls %v", tls)
				}
			} else {
				for _, k := range []string{"ca_file", "cert_file", "key_file"} {
					f, _ := tls[k].(string)
					vol := volumeFor(t, spec, f)
					want := map[string]string{"issuer": "secret", "csi": "csi", "existingSecret": "secret"}[tc.mode]
					if vol == nil || vol[want] == nil {
						t.Errorf("tls::%s = %q: volume %v, want %s", k, f, vol, want)
					}
				}
			}
			p := at(cfg, "service", "pipelines", "logs")
			if !slices.Equal(list(p, "receivers"), []string{"ztunnel"}) || !slices.Equal(list(p, "exporters"), []string{"otlp_grpc"}) {
				t.Errorf("node agent pipeline %v", p)
			}
		})
	}

	t.Run("none", func(t *testing.T) {
		r := accepted(t, vals("nodeAgent.mode", "none"))
		if len(r.ofKind("DaemonSet")) != 0 {
			t.Error("a node agent with nodeAgent.mode=none")
		}
		r.must(t, "Service", namespace, fullname+"-otlp")
	})
}

// TestDefaultCollector: the chart's collector prints every event and exports
// network_enforcer_policy_denies on :9464, behind TLS from the chart's CA.
func TestDefaultCollector(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		mode   string
	}{
		{"issuer", nil, "issuer"},
		{"csi", vals("telemetry.default.tls.mode", "csi"), "csi"},
		{"existingSecret", vals("telemetry.default.tls.mode", "existingSecret", "telemetry.default.tls.existingSecret.name", "collector-tls"), "existingSecret"},
		{"insecure", vals("telemetry.default.tls.mode", "insecure"), "insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := accepted(t, merge(vals("controller.provider.name", "cilium"), tc.values))
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-collector-config"))
			grpc := at(cfg, "receivers", "otlp", "protocols", "grpc")
			if str(t, grpc, "endpoint") != "0.0.0.0:4317" || at(cfg, "receivers", "otlp", "protocols", "http") != nil {
				t.Errorf("otlp receiver %v", at(cfg, "receivers", "otlp"))
			}
			spec := podSpec(t, r.must(t, "Deployment", namespace, fullname+"-collector"))
			if tc.mode == "insecure" {
				if at(grpc, "tls") != nil {
					t.Errorf("insecure collector has tls %v", at(grpc, "tls"))
				}
			} else {
				for _, k := range []string{"cert_file", "key_file"} {
					f := str(t, grpc, "tls", k)
					vol := volumeFor(t, spec, f)
					want := map[string]string{"issuer": "secret", "csi": "csi", "existingSecret": "secret"}[tc.mode]
					if vol == nil || vol[want] == nil {
						t.Errorf("tls::%s = %q: volume %v, want %s", k, f, vol, want)
					}
				}
			}
			if str(t, cfg, "exporters", "debug", "verbosity") != "detailed" ||
				str(t, cfg, "exporters", "prometheus", "endpoint") != "0.0.0.0:9464" ||
				str(t, cfg, "exporters", "prometheus", "translation_strategy") != "UnderscoreEscapingWithoutSuffixes" {
				t.Errorf("exporters %v", at(cfg, "exporters"))
			}
			if !slices.Equal(keysOf(cfg, "connectors"), []string{"policy_denies"}) {
				t.Errorf("connectors %v", keysOf(cfg, "connectors"))
			}
			logs, metrics := at(cfg, "service", "pipelines", "logs"), at(cfg, "service", "pipelines", "metrics")
			if !slices.Equal(list(logs, "receivers"), []string{"otlp"}) || !slices.Equal(list(logs, "exporters"), []string{"debug", "policy_denies"}) ||
				!slices.Equal(list(metrics, "receivers"), []string{"policy_denies"}) || !slices.Equal(list(metrics, "exporters"), []string{"prometheus"}) ||
				len(keysOf(cfg, "service", "pipelines")) != 2 {
				t.Errorf("pipelines %v", at(cfg, "service", "pipelines"))
			}
			for svc, port := range map[string]int64{fullname + "-collector": 4317, fullname + "-collector-metrics": 9464} {
				ports, _, _ := unstructured.NestedSlice(r.must(t, "Service", namespace, svc).Object, "spec", "ports")
				if len(ports) != 1 || at(ports[0], "port") != port {
					t.Errorf("Service %s ports %v, want %d", svc, ports, port)
				}
			}

			// The enforcer's side of the hop.
			ecfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
			etls, _ := at(ecfg, "exporters", "otlp_grpc/events", "tls").(map[string]any)
			espec := podSpec(t, r.must(t, "Deployment", namespace, fullname))
			switch tc.mode {
			case "insecure":
				if etls["insecure"] != true || len(volumes(espec)) != 1 {
					t.Errorf("insecure events hop: tls %v, volumes %v", etls, volumes(espec))
				}
			case "existingSecret":
				// Only the CA: the collector's key stays out of the enforcer.
				vol := volumeFor(t, espec, etls["ca_file"].(string))
				items, _ := at(vol, "secret", "items").([]any)
				if at(vol, "secret", "secretName") != "collector-tls" || len(items) != 1 || at(items[0], "key") != "ca.crt" {
					t.Errorf("events CA volume %v", vol)
				}
			}
		})
	}
}

// TestExternalCollector: the enforcer sends events to your collector over gRPC
// or HTTP, with TLS from the system roots, an issuer or a Secret (a client
// certificate optional), or in plaintext.
func TestExternalCollector(t *testing.T) {
	base := vals("controller.provider.name", "calico", "telemetry.collectorStrategy", "external")
	for _, tc := range []struct {
		name       string
		values     map[string]any
		exporter   string
		tls        map[string]any
		volumeKind string
	}{
		{"grpc/system", vals("telemetry.external.endpoint", "otel.example.com:4317"), "otlp_grpc/events", map[string]any{}, ""},
		{"http/system", vals("telemetry.external.endpoint", "https://otel.example.com:4318", "telemetry.external.protocol", "http",
			"telemetry.external.headers", map[string]any{"x-api-key": "k"}, "telemetry.external.tls.serverName", "otel.internal"),
			"otlp_http/events", map[string]any{"server_name_override": "otel.internal"}, ""},
		{"grpc/insecure", vals("telemetry.external.endpoint", "otel.example.com:4317", "telemetry.external.tls.mode", "insecure"),
			"otlp_grpc/events", map[string]any{"insecure": true}, ""},
		{"grpc/issuer", vals("telemetry.external.endpoint", "otel.example.com:4317", "telemetry.external.tls.mode", "issuer"),
			"otlp_grpc/events", map[string]any{"ca_file": "/etc/network-enforcer/tls/events/ca.crt", "cert_file": "/etc/network-enforcer/tls/events/tls.crt",
				"key_file": "/etc/network-enforcer/tls/events/tls.key", "reload_interval": "30s"}, "secret"},
		{"grpc/csi", vals("telemetry.external.endpoint", "otel.example.com:4317", "telemetry.external.tls.mode", "csi"),
			"otlp_grpc/events", map[string]any{"ca_file": "/etc/network-enforcer/tls/events/ca.crt", "cert_file": "/etc/network-enforcer/tls/events/tls.crt",
				"key_file": "/etc/network-enforcer/tls/events/tls.key", "reload_interval": "30s"}, "csi"},
		{"http/existingSecret-ca", vals("telemetry.external.endpoint", "https://otel.example.com:4318", "telemetry.external.protocol", "http",
			"telemetry.external.tls.mode", "existingSecret", "telemetry.external.tls.existingSecret.name", "otel-ca"),
			"otlp_http/events", map[string]any{"ca_file": "/etc/network-enforcer/tls/events/ca.crt"}, "secret"},
		{"grpc/existingSecret-mtls", vals("telemetry.external.endpoint", "otel.example.com:4317",
			"telemetry.external.tls.mode", "existingSecret", "telemetry.external.tls.existingSecret.name", "otel-client",
			"telemetry.external.tls.existingSecret.certKey", "tls.crt", "telemetry.external.tls.existingSecret.keyKey", "tls.key"),
			"otlp_grpc/events", map[string]any{"ca_file": "/etc/network-enforcer/tls/events/ca.crt", "cert_file": "/etc/network-enforcer/tls/events/tls.crt",
				"key_file": "/etc/network-enforcer/tls/events/tls.key", "reload_interval": "30s"}, "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := accepted(t, merge(base, tc.values))
			if r.get("Deployment", namespace, fullname+"-collector") != nil {
				t.Error("the chart's collector runs with the external strategy")
			}
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
			if got := keysOf(cfg, "exporters"); !slices.Equal(got, []string{"k8swriter", tc.exporter}) {
				t.Fatalf("exporters %v", got)
			}
			exp := at(cfg, "exporters", tc.exporter)
			tls, _ := at(exp, "tls").(map[string]any)
			if toYAML(tls) != toYAML(tc.tls) {
				t.Errorf("tls %v, want %v", tls, tc.tls)
			}
			if tc.name == "http/system" && at(exp, "headers", "x-api-key") != "k" {
				t.Errorf("headers %v", at(exp, "headers"))
			}
			spec := podSpec(t, r.must(t, "Deployment", namespace, fullname))
			vol, has := volumes(spec)["events-tls"]
			if has != (tc.volumeKind != "") || (has && vol[tc.volumeKind] == nil) {
				t.Errorf("events volume %v, want %q", vol, tc.volumeKind)
			}
		})
	}
}

func toYAML(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// TestConfigChecksum: a change of the collector configuration rolls the
// enforcer's pods; a change elsewhere does not.
func TestConfigChecksum(t *testing.T) {
	checksum := func(values map[string]any) string {
		r := render(t, values)
		a, _, _ := unstructured.NestedString(r.must(t, "Deployment", namespace, fullname).Object,
			"spec", "template", "metadata", "annotations", "checksum/config")
		if len(a) != 64 {
			t.Fatalf("checksum/config %q", a)
		}
		return a
	}
	base := checksum(nil)
	if checksum(vals("controller.statusSyncInterval", "45s")) == base {
		t.Error("a new status sync interval does not roll the enforcer")
	}
	if checksum(vals("image.tag", "other")) != base {
		t.Error("the image tag changes the configuration's checksum")
	}
}

// TestOutsidePeers: controller.learning reaches the learning processor's
// configuration.
func TestOutsidePeers(t *testing.T) {
	r := accepted(t, vals("controller.learning.outsidePeers", "ipBlocks", "controller.learning.ipv4Prefix", 24,
		"controller.learning.ipv6Prefix", 64))
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	if l := at(cfg, "processors", "learning"); fmt.Sprint(l) != "map[ipv4_prefix:24 ipv6_prefix:64 outside_peers:ip_blocks]" {
		t.Errorf("learning processor %v", l)
	}
}

// TestEntitiesAndTheCiliumBackend: outsidePeers entities and the Cilium
// provider's backend cilium reach the learning processor, and only the
// backend cilium lets the ClusterRole write CiliumNetworkPolicies.
func TestEntitiesAndTheCiliumBackend(t *testing.T) {
	r := accepted(t, vals("controller.provider.name", "cilium", "controller.provider.cilium.backend", "cilium",
		"controller.learning.outsidePeers", "entities"))
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	if l := at(cfg, "processors", "learning"); fmt.Sprint(l) != "map[cilium_backend:cilium ipv4_prefix:32 ipv6_prefix:128 outside_peers:entities]" {
		t.Errorf("learning processor %v", l)
	}
	cr := r.must(t, "ClusterRole", "", fullname)
	rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	var verbs []string
	for _, rule := range rules {
		if slices.Contains(list(rule, "resources"), "ciliumnetworkpolicies") {
			verbs = list(rule, "verbs")
		}
	}
	if !slices.Equal(verbs, []string{"get", "list", "watch", "create", "update", "patch", "delete"}) {
		t.Errorf("ciliumnetworkpolicies verbs %v with backend cilium", verbs)
	}
	if _, err := charttest.Render(context.Background(), release, namespace, vals("controller.provider.name", "cilium",
		"controller.provider.cilium.backend", "calico")); err == nil || !strings.Contains(err.Error(), "backend") {
		t.Errorf("backend calico: %v, want the schema's refusal", err)
	}
}

// TestOptionalParts: the memory limiter and the scrape endpoint can be left out.
func TestOptionalParts(t *testing.T) {
	r := accepted(t, vals("controller.memoryLimiter.enabled", false, "controller.metrics.enabled", false,
		"controller.provider.name", "cilium", "telemetry.collectorStrategy", "none"))
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	if got := list(cfg, "service", "pipelines", "logs/flows", "processors"); !slices.Equal(got, []string{"learning"}) {
		t.Errorf("flows processors %v", got)
	}
	if at(cfg, "processors", "memory_limiter") != nil {
		t.Error("memory_limiter configured while off")
	}
	if str(t, cfg, "service", "telemetry", "metrics", "level") != "none" || r.get("Service", namespace, fullname+"-metrics") != nil {
		t.Error("the collector's metrics are exposed while off")
	}
	if got := list(cfg, "service", "pipelines", "logs/events", "exporters"); !slices.Equal(got, []string{"nop", "k8swriter"}) {
		t.Errorf("events exporters %v", got)
	}
}

// TestLint: helm lint --strict passes with each provider.
func TestLint(t *testing.T) {
	for _, provider := range []string{"istio", "calico", "cilium"} {
		t.Run(provider, func(t *testing.T) {
			charttest.Require(t)
			out, err := charttest.Lint(context.Background(), vals("controller.provider.name", provider))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// TestReadmeListsEveryValue: chart/README.md has a row for each value of
// values.yaml, so a new value comes with its documentation.
func TestReadmeListsEveryValue(t *testing.T) {
	dir, err := charttest.Chart()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	var walk func(prefix string, v map[string]any)
	walk = func(prefix string, v map[string]any) {
		for k, e := range v {
			path := prefix + k
			if m, ok := e.(map[string]any); ok && len(m) > 0 && k != "resources" {
				walk(path+".", m)
				continue
			}
			leaves = append(leaves, path)
		}
	}
	walk("", values)
	if len(leaves) < 50 {
		t.Fatalf("only %d values found", len(leaves))
	}
	for _, path := range leaves {
		if !strings.Contains(string(readme), "| `"+path+"` |") {
			t.Errorf("README.md has no row for %s", path)
		}
	}
}
