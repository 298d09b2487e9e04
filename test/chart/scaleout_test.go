package chart

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubewarden/network-enforcer/internal/charttest"
)

// scaleOutValues is Cilium with every replica reading a share of the nodes.
func scaleOutValues(kv ...any) map[string]any {
	return merge(vals("controller.provider.name", "cilium", "controller.scaleOut.mode", "nodes"), vals(kv...))
}

// TestScaleOut: in nodes mode the replicas read the nodes through the Peer
// service, send the leader what they learned over mutual TLS with a key pair
// of the chart's CA, and may keep membership Leases; the objects pass the
// server's dry run and the configuration the binary's check.
func TestScaleOut(t *testing.T) {
	r := render(t, scaleOutValues())
	leaderName := "leader." + fullname + "." + namespace
	peersDir := "/etc/network-enforcer/tls/peers/"

	deploy := r.must(t, "Deployment", namespace, fullname)
	if n, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); n != 3 {
		t.Errorf("enforcer replicas %d, want controller.scaleOut.replicas (3)", n)
	}
	pod := at(deploy.Object, "spec", "template", "spec")
	container := at(pod, "containers").([]any)[0]
	if !strings.Contains(fmt.Sprint(at(container, "ports")), "containerPort:4320 name:peers") {
		t.Errorf("enforcer ports %v lack peers 4320", at(container, "ports"))
	}
	var secret string
	for _, v := range at(pod, "volumes").([]any) {
		if at(v, "name") == "peers-tls" {
			secret, _ = at(v, "secret", "secretName").(string)
		}
	}
	if secret != fullname+"-peers" {
		t.Errorf("peers-tls volume from Secret %q, want %s-peers", secret, fullname)
	}

	cert := r.must(t, "Certificate", namespace, fullname+"-peers")
	usages, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "usages")
	dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if !slices.Contains(usages, "server auth") || !slices.Contains(usages, "client auth") || !slices.Equal(dns, []string{leaderName}) {
		t.Errorf("peers Certificate usages %v, dnsNames %v", usages, dns)
	}
	if s, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name"); s != fullname+"-ca" {
		t.Errorf("peers Certificate issuer %q, want the chart's CA", s)
	}
	r.must(t, "Certificate", namespace, fullname+"-ca")

	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	hubble := at(cfg, "receivers", "hubble")
	if at(hubble, "relay") != nil || str(t, hubble, "nodes", "endpoint") != "hubble-peer.kube-system.svc:443" ||
		str(t, hubble, "nodes", "tls", "server_name_override") != "hubble-peer.default.hubble-grpc.cilium.io" || str(t, hubble, "enforcer") != "enforcer" {
		t.Errorf("hubble receiver %v, want nodes mode on the Peer service", hubble)
	}
	if l := at(cfg, "receivers", "leader"); str(t, l, "endpoint") != "0.0.0.0:4320" || str(t, l, "tls", "client_ca_file") != peersDir+"ca.crt" ||
		str(t, l, "tls", "cert_file") != peersDir+"tls.crt" {
		t.Errorf("leader receiver %v", l)
	}
	if e := at(cfg, "exporters", "leader"); fmt.Sprint(at(e, "port")) != "4320" || str(t, e, "tls", "server_name_override") != leaderName ||
		str(t, e, "tls", "cert_file") != peersDir+"tls.crt" || str(t, e, "aggregation", "interval") != "1s" {
		t.Errorf("leader exporter %v", e)
	}
	if got := fmt.Sprint(at(cfg, "service", "pipelines", "logs/flows", "exporters")); got != "[leader]" {
		t.Errorf("logs/flows exporters %s, want [leader]", got)
	}
	if got := fmt.Sprint(at(cfg, "service", "pipelines", "logs/learned")); got != "map[exporters:[k8swriter forward/violations] receivers:[leader]]" {
		t.Errorf("logs/learned %s", got)
	}

	role := r.must(t, "Role", namespace, fullname+"-leader-election")
	if rules := fmt.Sprint(at(role.Object, "rules")); !strings.Contains(rules, "verbs:[get list watch update delete]") {
		t.Errorf("the Role lets the replicas keep no membership Lease: %s", rules)
	}
	r.must(t, "PodDisruptionBudget", namespace, fullname)

	np := r.must(t, "NetworkPolicy", namespace, fullname)
	if ingress := fmt.Sprint(at(np.Object, "spec", "ingress")); !strings.Contains(ingress, "port:4320") {
		t.Errorf("the enforcer's NetworkPolicy lets no replica reach the leader: %s", ingress)
	}
	dryRun(t, r.objs)
	validateConfigs(t, r)

	// Relay mode, the default, keeps none of it.
	relay := render(t, vals("controller.provider.name", "cilium"))
	if relay.get("Certificate", namespace, fullname+"-peers") != nil {
		t.Error("relay mode renders the peers Certificate")
	}
	if strings.Contains(fmt.Sprint(at(relay.must(t, "Role", namespace, fullname+"-leader-election").Object, "rules")), "list") {
		t.Error("relay mode may list Leases")
	}
}

// TestScaleOutCSIAndEgress: the key pair from the CSI driver carries both
// usages, and restricted egress reaches the nodes' Hubble port and the leader.
func TestScaleOutCSIAndEgress(t *testing.T) {
	r := render(t, scaleOutValues("controller.scaleOut.tls.mode", "csi",
		"networkPolicy.egress.enabled", true, "networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1/32"},
		"networkPolicy.egress.nodeCIDRs", []any{"192.168.0.0/24"}))
	if r.get("Certificate", namespace, fullname+"-peers") != nil {
		t.Error("csi mode renders a Certificate")
	}
	deploy := r.must(t, "Deployment", namespace, fullname)
	var usages any
	for _, v := range at(deploy.Object, "spec", "template", "spec", "volumes").([]any) {
		if at(v, "name") == "peers-tls" {
			usages = at(v, "csi", "volumeAttributes", "csi.cert-manager.io/key-usages")
		}
	}
	if usages != "digital signature,key encipherment,server auth,client auth" {
		t.Errorf("peers CSI key usages %v", usages)
	}
	egress := fmt.Sprint(at(r.must(t, "NetworkPolicy", namespace, fullname).Object, "spec", "egress"))
	for _, want := range []string{"cidr:192.168.0.0/24", "port:4244", "port:4320"} {
		if !strings.Contains(egress, want) {
			t.Errorf("egress lacks %s: %s", want, egress)
		}
	}
	if strings.Contains(egress, "hubble-relay") {
		t.Errorf("egress still allows Hubble Relay: %s", egress)
	}
	dryRun(t, r.objs)
	validateConfigs(t, r)
}

// TestScaleOutRefused: nodes mode is Cilium's, over TLS, with its key pair.
func TestScaleOutRefused(t *testing.T) {
	charttest.Require(t)
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"calico", vals("controller.provider.name", "calico", "controller.scaleOut.mode", "nodes"), "Goldmane is one stream, which the leader reads"},
		{"istio with fluent-bit", vals("controller.scaleOut.mode", "nodes", "nodeAgent.mode", "fluent-bit"), "needs nodeAgent.mode: network-enforcer"},
		{"plaintext", scaleOutValues("controller.provider.cilium.tls.mode", "insecure"), "the nodes' Hubble servers accept mutual TLS only"},
		{"existingSecret without a name", scaleOutValues("controller.scaleOut.tls.mode", "existingSecret"),
			"controller.scaleOut.tls.existingSecret.name is required"},
		{"egress without the nodes", scaleOutValues("networkPolicy.egress.enabled", true, "networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1/32"}),
			"networkPolicy.egress.nodeCIDRs is required"},
		{"an unknown mode", vals("controller.scaleOut.mode", "sharded"), "value must be one of 'relay', 'nodes'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := charttest.Render(context.Background(), release, namespace, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestScaleOutIstio: with Istio every replica takes the node agents' records
// (none refuses them), learns, and sends the leader what it learned.
func TestScaleOutIstio(t *testing.T) {
	r := render(t, vals("controller.scaleOut.mode", "nodes"))
	cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
	if at(cfg, "receivers", "ztunnel", "leader_elector") != nil {
		t.Error("the ztunnel receiver follows leadership: the standbys would refuse the node agents")
	}
	if at(cfg, "receivers", "hubble") != nil || at(cfg, "receivers", "leader") == nil || at(cfg, "exporters", "leader") == nil {
		t.Errorf("receivers %v, exporters %v", keysOf(cfg, "receivers"), keysOf(cfg, "exporters"))
	}
	if got := fmt.Sprint(at(cfg, "service", "pipelines", "logs/flows", "receivers")); got != "[ztunnel]" {
		t.Errorf("logs/flows receivers %s", got)
	}
	if got := fmt.Sprint(at(cfg, "service", "pipelines", "logs/flows", "exporters")); got != "[leader]" {
		t.Errorf("logs/flows exporters %s", got)
	}
	r.must(t, "Certificate", namespace, fullname+"-peers")
	r.must(t, "DaemonSet", namespace, fullname+"-node-agent")
	dryRun(t, r.objs)
	validateConfigs(t, r)

	// Restricted egress needs no node addresses here: the node agents come
	// to the replicas.
	eg := render(t, vals("controller.scaleOut.mode", "nodes", "networkPolicy.egress.enabled", true,
		"networkPolicy.egress.apiServerCIDRs", []any{"10.0.0.1/32"}))
	egress := fmt.Sprint(at(eg.must(t, "NetworkPolicy", namespace, fullname).Object, "spec", "egress"))
	if !strings.Contains(egress, "port:4320") || strings.Contains(egress, "port:4244") {
		t.Errorf("egress %s", egress)
	}
}
