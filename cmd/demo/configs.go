package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubewarden/network-enforcer/extension/leaderelectorextension"
	"github.com/kubewarden/network-enforcer/internal/charttest"
)

// relayServerName is the name in Hubble Relay's certificate that Cilium's
// clients verify, as in a cluster.
const relayServerName = "ui.hubble-relay.cilium.io"

// relaySecret is the Secret that the chart reads the relay's client certificate
// from by default, in the namespace Cilium keeps it in.
var relaySecret = metav1.ObjectMeta{Namespace: "kube-system", Name: "hubble-relay-client-certs"}

// startCollectors renders the chart for Cilium, as `helm install` would with the
// demo's relay address, backend cilium and outside peers learned as entities, and runs its two collectors: the enforcer and the
// telemetry collector of collectorStrategy default. What only exists in a
// cluster is swapped for its local equivalent: the kubeconfig for the
// ServiceAccount, free loopback ports for the Services, the demo CA's files for
// what cert-manager's CSI driver would write. The relay's client certificate
// is read from its Secret through the secret provider, as in a cluster.
func (d *demo) startCollectors(ctx context.Context) error {
	if err := d.createRelaySecret(ctx); err != nil {
		return err
	}
	objs, err := charttest.Render(ctx, "network-enforcer", namespace, map[string]any{
		"controller": map[string]any{
			"replicas":           1,
			"statusSyncInterval": "5s",
			// Backend cilium and outside_peers entities: the outside
			// service is learned by its name and rendered as toFQDNs.
			"provider": map[string]any{"name": "cilium", "cilium": map[string]any{"endpoint": d.relayAddr, "backend": "cilium"}},
			"learning": map[string]any{"outsidePeers": "entities"},
		},
	})
	if err != nil {
		return fmt.Errorf("rendering the chart: %w", err)
	}
	configs := map[string]map[string]any{}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "config.yaml")
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
			return fmt.Errorf("%s: %w", o.GetName(), err)
		}
		configs[o.GetLabels()["app.kubernetes.io/component"]] = cfg
	}
	enforcerCfg, collectorCfg := configs["enforcer"], configs["collector"]
	if enforcerCfg == nil || collectorCfg == nil {
		return errors.New("the chart rendered no enforcer or collector configuration")
	}

	serverPair, err := d.ca.IssueServer("collector", "network-enforcer-collector.network-enforcer.svc")
	if err != nil {
		return err
	}
	events, health1, health2, metrics1 := freePort(), freePort(), freePort(), freePort()
	d.metrics = freePort()
	set(collectorCfg, health1, "extensions", "health_check", "endpoint")
	set(collectorCfg, events, "receivers", "otlp", "protocols", "grpc", "endpoint")
	set(collectorCfg, serverPair.CertFile, "receivers", "otlp", "protocols", "grpc", "tls", "cert_file")
	set(collectorCfg, serverPair.KeyFile, "receivers", "otlp", "protocols", "grpc", "tls", "key_file")
	set(collectorCfg, d.metrics, "exporters", "prometheus", "endpoint")

	set(enforcerCfg, "kubeConfig", "extensions", "leader_elector", "auth_type")
	set(enforcerCfg, "kubeConfig", "extensions", "enforcer", "auth_type")
	set(enforcerCfg, health2, "extensions", "health_check", "endpoint")
	d.serveReview(enforcerCfg)
	set(enforcerCfg, events, "exporters", "otlp_grpc/events", "endpoint")
	set(enforcerCfg, d.ca.CertFile, "exporters", "otlp_grpc/events", "tls", "ca_file")
	host, portText, _ := net.SplitHostPort(metrics1)
	port, _ := strconv.Atoi(portText)
	set(enforcerCfg, []any{map[string]any{"pull": map[string]any{"exporter": map[string]any{"prometheus": map[string]any{
		"host": host, "port": port}}}}}, "service", "telemetry", "metrics", "readers")

	files := map[string]map[string]any{"collector": collectorCfg, "enforcer": enforcerCfg}
	paths := map[string]string{}
	for name, cfg := range files {
		b, err := yaml.Marshal(cfg)
		if err != nil {
			return err
		}
		paths[name] = filepath.Join(d.dir, name+".yaml")
		if err := os.WriteFile(paths[name], b, 0o600); err != nil {
			return err
		}
	}
	if d.collector, err = d.startProcess("collector", paths["collector"]); err != nil {
		return err
	}
	if d.enforcer, err = d.startProcess("enforcer", paths["enforcer"]); err != nil {
		return err
	}
	d.info("enforcer:  bin/network-enforcer --config %s (log %s)", paths["enforcer"], d.enforcer.log)
	d.info("collector: bin/network-enforcer --config %s (log %s)", paths["collector"], d.collector.log)
	if err := d.waitLog(ctx, d.collector, "Everything is ready", time.Minute); err != nil {
		return err
	}
	if err := d.waitLeading(ctx, metrics1, time.Minute); err != nil {
		return err
	}
	d.info("the enforcer leads: it streams flows from the relay and writes")
	if err := d.checkReview(ctx); err != nil {
		return err
	}
	return nil
}

// waitLeading waits until the enforcer, whose telemetry is at metrics, has
// begun a term of leadership: network_enforcer_leader_terms on its own
// Prometheus endpoint, which a user can curl, rather than a line of its log.
func (d *demo) waitLeading(ctx context.Context, metrics string, timeout time.Duration) error {
	return d.poll(ctx, leaderelectorextension.MetricTerms+" on "+metrics, timeout, func() (bool, error) {
		select {
		case <-d.enforcer.exited:
			return false, fmt.Errorf("%s exited; see %s, which ends:\n%s", d.enforcer.name, d.enforcer.log, d.enforcer.logTail(20))
		default:
		}
		return leaderTerms(ctx, metrics) > 0, nil
	})
}

// leaderTerms sums the samples of network_enforcer_leader_terms at the
// Prometheus endpoint metrics (0 while it does not answer).
func leaderTerms(ctx context.Context, metrics string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metrics+"/metrics", http.NoBody)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var n float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[0], leaderelectorextension.MetricTerms) {
			continue
		}
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			n += v
		}
	}
	return n
}

// createRelaySecret stores the relay's CA and a client certificate in the
// Secret where the chart's default values look for them.
func (d *demo) createRelaySecret(ctx context.Context) error {
	pair, err := d.ca.IssueClient("hubble-relay-client")
	if err != nil {
		return err
	}
	data := map[string][]byte{}
	for key, path := range map[string]string{"ca.crt": d.ca.CertFile, "tls.crt": pair.CertFile, "tls.key": pair.KeyFile} {
		if data[key], err = os.ReadFile(path); err != nil {
			return err
		}
	}
	s := &corev1.Secret{ObjectMeta: relaySecret, Type: corev1.SecretTypeTLS, Data: data}
	if err := d.env.Client.Create(ctx, s); err != nil {
		return err
	}
	d.info("Secret %s/%s holds the relay's CA and the enforcer's client certificate", relaySecret.Namespace, relaySecret.Name)
	return nil
}

// set puts v at the path of nested maps in cfg, making maps on the way.
func set(cfg map[string]any, v any, path ...string) {
	m := cfg
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}
