package chart

import (
	"context"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/charttest"
)

// TestRefusedValues: a wrong value fails `helm template` (as it fails `helm
// install`) with a message that names the value and what it may be.
func TestRefusedValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"unknown provider", vals("controller.provider.name", "linkerd"),
			[]string{"/controller/provider/name", "value must be one of 'istio', 'calico', 'cilium'"}},
		{"calico insecure", vals("controller.provider.name", "calico", "controller.provider.calico.tls.mode", "insecure"),
			[]string{"/controller/provider/calico/tls/mode", "value must be one of 'issuer', 'csi', 'existingSecret'"}},
		{"bad TLS mode", vals("controller.provider.cilium.tls.mode", "plaintext"),
			[]string{"/controller/provider/cilium/tls/mode", "value must be one of 'issuer', 'csi', 'existingSecret', 'insecure'"}},
		{"bad istio TLS mode", vals("controller.provider.istio.tls.mode", "mtls"),
			[]string{"/controller/provider/istio/tls/mode", "value must be one of"}},
		{"bad telemetry TLS mode", vals("telemetry.default.tls.mode", "system"),
			[]string{"/telemetry/default/tls/mode", "value must be one of 'issuer', 'csi', 'existingSecret', 'insecure'"}},
		{"bad strategy", vals("telemetry.collectorStrategy", "otlp"),
			[]string{"/telemetry/collectorStrategy", "value must be one of 'default', 'external', 'none'"}},
		{"external without endpoint", vals("telemetry.collectorStrategy", "external"),
			[]string{"/telemetry/external/endpoint", "minLength"}},
		{"bad external protocol", vals("telemetry.collectorStrategy", "external", "telemetry.external.endpoint", "x:4317",
			"telemetry.external.protocol", "tcp"), []string{"/telemetry/external/protocol", "value must be one of 'grpc', 'http'"}},
		{"bad node agent", vals("nodeAgent.mode", "vector"),
			[]string{"/nodeAgent/mode", "value must be one of 'fluent-bit', 'network-enforcer', 'none'"}},
		{"existingSecret without a name", vals("controller.provider.name", "cilium", "controller.provider.cilium.tls.existingSecret.name", ""),
			[]string{"/controller/provider/cilium/tls/existingSecret/name", "minLength"}},
		{"a typo", vals("controller.provider.cilium.endpont", "x:80"),
			[]string{"/controller/provider/cilium", "additional properties 'endpont' not allowed"}},
		{"a wrong type", vals("controller.replicas", "two"),
			[]string{"/controller/replicas", "got string, want integer"}},
		{"a bad outsidePeers", vals("controller.learning.outsidePeers", "ip_blocks"),
			[]string{"/controller/learning/outsidePeers", "value must be one of 'drop', 'ipBlocks'"}},
		{"a too short prefix", vals("controller.learning.ipv4Prefix", 4),
			[]string{"/controller/learning/ipv4Prefix", "minimum"}},
		{"a bad duration", vals("controller.statusSyncInterval", "30 seconds"),
			[]string{"/controller/statusSyncInterval", "does not match pattern"}},
		{"an endpoint without a port", vals("controller.provider.calico.endpoint", "goldmane.calico-system.svc"),
			[]string{"/controller/provider/calico/endpoint", "does not match pattern"}},
		{"a budget that allows no eviction", vals("controller.podDisruptionBudget.maxUnavailable", 0),
			[]string{"/controller/podDisruptionBudget/maxUnavailable"}},
		{"a budget of 0%", vals("telemetry.default.podDisruptionBudget.maxUnavailable", "0%"),
			[]string{"/telemetry/default/podDisruptionBudget/maxUnavailable"}},
		{"a writer that never writes", vals("controller.writer.qps", 0),
			[]string{"/controller/writer/qps"}},
		{"a FlowSchema after service-accounts", vals("controller.apiPriority.matchingPrecedence", 9500),
			[]string{"/controller/apiPriority/matchingPrecedence", "maximum"}},
		{"a budget typo", vals("controller.podDisruptionBudget.minAvailable", 1),
			[]string{"/controller/podDisruptionBudget", "additional properties 'minAvailable' not allowed"}},
		{"a bad API server CIDR", vals("networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1"}),
			[]string{"/networkPolicy/egress/apiServerCIDRs/0", "does not match pattern"}},
		{"a peer typo", vals("networkPolicy.metricsFrom", []any{map[string]any{"namespaceSelectr": map[string]any{}}}),
			[]string{"/networkPolicy/metricsFrom/0", "additional properties 'namespaceSelectr' not allowed"}},
		{"a bad egress port", vals("networkPolicy.egress.flowSourcePorts", []any{70000}),
			[]string{"/networkPolicy/egress/flowSourcePorts/0", "maximum"}},
		{"a bad review TLS mode", vals("controller.review.tls.mode", "insecure"),
			[]string{"/controller/review/tls/mode", "value must be one of 'auto', 'issuer', 'existingSecret', 'none'"}},
		{"review existingSecret without a name", vals("controller.review.tls.mode", "existingSecret"),
			[]string{"/controller/review/tls/existingSecret/name", "minLength"}},
		{"an empty review audience", vals("controller.review.audience", ""),
			[]string{"/controller/review/audience", "minLength"}},
		// What the schema cannot say, the templates refuse.
		{"cilium issuer without an issuer", vals("controller.provider.name", "cilium", "controller.provider.cilium.tls.mode", "issuer"),
			[]string{"controller.provider.cilium.tls.issuer.name is required in issuer mode"}},
		{"istio existingSecret without the client Secret", vals("controller.provider.istio.tls.mode", "existingSecret",
			"controller.provider.istio.tls.existingSecret.name", "server"),
			[]string{"controller.provider.istio.tls.existingSecret.clientName is required"}},
		{"calico without the issued Secret or a name", vals("controller.provider.name", "calico",
			"controller.provider.calico.tls.calicoCA.issue", false),
			[]string{"controller.provider.calico.tls.existingSecret.name is required in existingSecret mode"}},
		{"half a client key pair", vals("telemetry.collectorStrategy", "external", "telemetry.external.endpoint", "x:4317",
			"telemetry.external.tls.mode", "existingSecret", "telemetry.external.tls.existingSecret.name", "s",
			"telemetry.external.tls.existingSecret.certKey", "tls.crt"),
			[]string{"telemetry.external.tls.existingSecret: set both certKey and keyKey, or neither"}},
		{"egress without the API server", vals("networkPolicy.egress.enabled", true),
			[]string{"networkPolicy.egress.apiServerCIDRs is required"}},
		{"egress to an external collector without a rule", vals("networkPolicy.egress.enabled", true,
			"networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1/32"},
			"telemetry.collectorStrategy", "external", "telemetry.external.endpoint", "x:4317"),
			[]string{"networkPolicy.egress.extraRules is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			charttest.Require(t)
			_, err := charttest.Render(context.Background(), release, namespace, tc.values)
			if err == nil {
				t.Fatal("rendered")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestCalicoInsecureRefusedByTemplate: without the schema (helm's
// --skip-schema-validation), the template still refuses Calico in plaintext.
func TestCalicoInsecureRefusedByTemplate(t *testing.T) {
	helm := charttest.Require(t)
	chart, err := charttest.Chart()
	if err != nil {
		t.Fatal(err)
	}
	out, err := runHelm(helm, "template", release, chart, "--skip-schema-validation", "--kube-version", charttest.KubeVersion,
		"--set", "controller.provider.name=calico", "--set", "controller.provider.calico.tls.mode=insecure")
	if err == nil || !strings.Contains(out, "Goldmane accepts mutual TLS only") {
		t.Fatalf("Calico without TLS rendered (%v):\n%s", err, out)
	}
}
