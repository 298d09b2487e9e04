package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reviewCase is one setup of the review page: where it listens and its TLS.
type reviewCase struct {
	name   string
	values map[string]any
	// exposed: off loopback, with a Service and a NetworkPolicy rule.
	exposed bool
	// tls is the mode in effect: issuer, existingSecret or none.
	tls string
	// issuerName, issuerKind of the page's Certificate (issuer mode).
	issuerName, issuerKind string
	// certFile, keyFile are the files the page's configuration names.
	certFile, keyFile string
	// extraDNS is a further DNS name of the Certificate.
	extraDNS string
}

var reviewCases = []reviewCase{
	{name: "loopback", tls: "none"},
	// Off loopback, auto is the chart's CA, as every hop that crosses the
	// network; with cilium and no default collector, the review page is the
	// only hop that needs the chart's CA.
	{name: "exposed/auto/cilium", exposed: true, tls: "issuer", issuerName: fullname + "-ca", issuerKind: "Issuer",
		certFile: "tls.crt", keyFile: "tls.key",
		values: vals("controller.provider.name", "cilium", "telemetry.collectorStrategy", "none", "controller.review.endpoint", "0.0.0.0:8090")},
	{name: "exposed/issuer", exposed: true, tls: "issuer", issuerName: "corp-ca", issuerKind: "ClusterIssuer",
		certFile: "tls.crt", keyFile: "tls.key", extraDNS: "review.example.com",
		values: vals("controller.review.endpoint", ":9443", "controller.review.tls.mode", "issuer",
			"controller.review.tls.issuer.name", "corp-ca", "controller.review.tls.issuer.kind", "ClusterIssuer",
			"controller.review.tls.dnsNames", []any{"review.example.com"})},
	{name: "exposed/existingSecret", exposed: true, tls: "existingSecret", certFile: "cert.pem", keyFile: "key.pem",
		values: vals("controller.review.endpoint", "0.0.0.0:8090", "controller.review.tls.mode", "existingSecret",
			"controller.review.tls.existingSecret.name", "review-tls", "controller.review.tls.existingSecret.certKey", "cert.pem",
			"controller.review.tls.existingSecret.keyKey", "key.pem")},
	// TLS at a proxy in front of the page.
	{name: "exposed/none", exposed: true, tls: "none",
		values: vals("controller.review.endpoint", "0.0.0.0:8090", "controller.review.tls.mode", "none")},
	// kubectl port-forward to https://localhost:8090.
	{name: "loopback/issuer", tls: "issuer", issuerName: fullname + "-ca", issuerKind: "Issuer", certFile: "tls.crt", keyFile: "tls.key",
		values: vals("controller.review.tls.mode", "issuer")},
}

// TestReviewPage renders each setup of the review page and checks what it
// adds: off loopback a Service and the page's port open in the enforcer's
// NetworkPolicy, and TLS from the chart's CA by default, an issuer of yours
// or a Secret of yours: the Certificate with the Service's names, its Secret
// mounted, the page's configuration naming the mounted files, re-read when
// cert-manager renews them; on loopback, by default, none of it. Every
// object goes through the API server's dry run and every configuration
// through the binary's validate.
func TestReviewPage(t *testing.T) {
	for _, tc := range reviewCases {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.values)
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
			review := at(cfg, "extensions", "review")
			if got := str(t, review, "access", "audience"); got != "network-enforcer-review" {
				t.Errorf("access::audience %q, want the chart's default audience", got)
			}
			spec := podSpec(t, r.must(t, "Deployment", namespace, fullname))
			certName := fullname + "-review-server"
			cert := r.get("Certificate", namespace, certName)
			tls, _ := at(review, "tls").(map[string]any)

			switch tc.tls {
			case "none":
				if tls != nil || cert != nil || volumes(spec)["review-tls"] != nil {
					t.Errorf("TLS %v, Certificate %v, volume %v: want no TLS", tls, cert != nil, volumes(spec)["review-tls"])
				}
			default:
				dir := "/etc/network-enforcer/tls/review/"
				if tls["cert_file"] != dir+tc.certFile || tls["key_file"] != dir+tc.keyFile || tls["reload_interval"] != "30s" {
					t.Errorf("review tls %v, want %s%s and %s%s, re-read every 30s", tls, dir, tc.certFile, dir, tc.keyFile)
				}
				for _, k := range []string{"cert_file", "key_file"} {
					vol := volumeFor(t, spec, tls[k].(string))
					secret, _ := at(vol, "secret", "secretName").(string)
					want := map[string]string{"issuer": certName, "existingSecret": "review-tls"}[tc.tls]
					if secret != want {
						t.Errorf("tls::%s %s is in volume %v, want the Secret %s", k, tls[k], vol, want)
					}
				}
			}
			if (cert != nil) != (tc.tls == "issuer") {
				t.Fatalf("Certificate %s rendered: %v, want %v", certName, cert != nil, tc.tls == "issuer")
			}
			if cert != nil {
				dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
				svc := fullname + "-review"
				for _, want := range []string{svc, svc + "." + namespace + ".svc", svc + "." + namespace + ".svc.cluster.local", "localhost"} {
					if !slices.Contains(dns, want) {
						t.Errorf("the page's certificate names %v, not %s", dns, want)
					}
				}
				if tc.extraDNS != "" && !slices.Contains(dns, tc.extraDNS) {
					t.Errorf("the page's certificate names %v, not %s", dns, tc.extraDNS)
				}
				usages, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "usages")
				issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
				kind, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "kind")
				if !slices.Contains(usages, "server auth") || issuer != tc.issuerName || kind != tc.issuerKind {
					t.Errorf("the page's certificate: usages %v, issuer %s %s, want server auth from %s %s", usages, kind, issuer, tc.issuerKind, tc.issuerName)
				}
				// The chart's CA exists when the page uses it, even when no
				// other hop does.
				chartCA := r.get("Issuer", namespace, fullname+"-ca") != nil
				if tc.issuerName == fullname+"-ca" && !chartCA {
					t.Error("the page's certificate names the chart's CA Issuer, which is not rendered")
				}
			}

			svc := r.get("Service", namespace, fullname+"-review")
			if (svc != nil) != tc.exposed {
				t.Fatalf("Service %s-review rendered: %v, want %v", fullname, svc != nil, tc.exposed)
			}
			var port string // the container's review port
			for _, c := range spec["containers"].([]any) {
				for _, p := range at(c, "ports").([]any) {
					if at(p, "name") == "review" {
						port = fmt.Sprint(at(p, "containerPort"))
					}
				}
			}
			var npRules []string
			np := r.must(t, "NetworkPolicy", namespace, fullname)
			for _, rule := range rules(t, r, np, "ingress", "from") {
				if !strings.HasPrefix(rule, "TCP/13133 ") && !strings.HasPrefix(rule, "TCP/8888 ") && !strings.HasPrefix(rule, "TCP/4317 ") {
					npRules = append(npRules, rule)
				}
			}
			if !tc.exposed {
				if port != "" || len(npRules) != 0 {
					t.Errorf("a page on loopback has container port %q and NetworkPolicy rules %v", port, npRules)
				}
			} else {
				endpoint := str(t, review, "endpoint")
				want := endpoint[strings.LastIndex(endpoint, ":")+1:]
				ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
				appProtocol := map[bool]string{true: "http", false: "https"}[tc.tls == "none"]
				if len(ports) != 1 || fmt.Sprint(at(ports[0], "port")) != want || at(ports[0], "targetPort") != "review" ||
					at(ports[0], "appProtocol") != appProtocol || port != want {
					t.Errorf("Service ports %v, container port %q, want %s (%s)", ports, port, want, appProtocol)
				}
				if !slices.Equal(npRules, []string{"TCP/" + want + ` <- [{"namespaceSelector":{}}]`}) {
					t.Errorf("NetworkPolicy rules for the page %v, want TCP/%s from every pod", npRules, want)
				}
			}
			dryRun(t, r.objs)
			validateConfigs(t, r)
		})
	}
}

// TestReviewOptions: the page's audience, and the peers that may reach it.
func TestReviewOptions(t *testing.T) {
	r := render(t, vals("controller.review.audience", "review.example.com", "controller.review.endpoint", "0.0.0.0:8090",
		"networkPolicy.reviewFrom", []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress-nginx"}}}}))
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	if got := str(t, cfg, "extensions", "review", "access", "audience"); got != "review.example.com" {
		t.Errorf("access::audience %q", got)
	}
	np := r.must(t, "NetworkPolicy", namespace, fullname)
	want := `TCP/8090 <- [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}}}]`
	if !contains(rules(t, r, np, "ingress", "from"), want) {
		t.Errorf("NetworkPolicy rules %v, want %s", rules(t, r, np, "ingress", "from"), want)
	}
	if r = render(t, vals("controller.review.enabled", false, "controller.review.endpoint", "0.0.0.0:8090")); r.get("Service", namespace, fullname+"-review") != nil ||
		r.get("Certificate", namespace, fullname+"-review-server") != nil {
		t.Error("a disabled review page has a Service or a Certificate")
	}
}
