//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
)

// ztunnelManifests are a ztunnel pod as the node agent finds it: istio-system,
// a name that starts with ztunnel-, a container istio-proxy, whose stdout the
// kubelet writes to /var/log/pods; the tests' pod program prints recorded
// ztunnel lines there. %[1]s is the testpod image.
const ztunnelManifests = `
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ztunnel
  namespace: istio-system
spec:
  selector:
    matchLabels: {app: ztunnel}
  template:
    metadata:
      labels: {app: ztunnel}
    spec:
      containers:
        - name: istio-proxy
          image: %[1]s
          imagePullPolicy: Never
          args: [ztunnel]
          volumeMounts:
            - {name: lines, mountPath: /etc/ztunnel, readOnly: true}
      volumes:
        - name: lines
          configMap: {name: ztunnel-lines}
`

// TestIstio installs the chart for Istio with the network-enforcer node agent:
// the DaemonSet (our binary) tails the ztunnel pod's real CRI log file and
// sends the records over mutual TLS, through the real headless Service, to the
// enforcer, whose receiver counts them. The certificates are the chart's
// existingSecret mode (no cert-manager here).
func TestIstio(t *testing.T) {
	require(t)
	importImages(t)
	createNamespace(t, "istio-system")
	kubectl(t, "-n", "istio-system", "create", "configmap", "ztunnel-lines",
		"--from-file=ztunnel.jsonl="+filepath.Join(env.root, dataplanetest.ZtunnelFixture))
	createNamespace(t, namespace)

	ca := certtest.NewCA(t, "flows")
	headless := release + "-network-enforcer-otlp-headless"
	otlp := release + "-network-enforcer-otlp"
	var names []string
	for _, svc := range []string{headless, otlp} {
		names = append(names, svc, svc+"."+namespace, svc+"."+namespace+".svc", svc+"."+namespace+".svc.cluster.local")
	}
	server := ca.Server(t, "enforcer", names...)
	client := ca.Client(t, "node-agent")
	secret(t, namespace, "flows-server", map[string]string{"ca.crt": ca.CertFile, "tls.crt": server.CertFile, "tls.key": server.KeyFile})
	secret(t, namespace, "flows-client", map[string]string{"ca.crt": ca.CertFile, "tls.crt": client.CertFile, "tls.key": client.KeyFile})

	installChart(t, "controller.provider.name=istio", "nodeAgent.mode=network-enforcer",
		"controller.provider.istio.tls.mode=existingSecret",
		"controller.provider.istio.tls.existingSecret.name=flows-server",
		"controller.provider.istio.tls.existingSecret.clientName=flows-client")
	logsOnFailure(t, namespace+"/"+enforcerPods, namespace+"/app.kubernetes.io/component=node-agent", "istio-system/app=ztunnel")
	enforcers := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	waitReady(t, namespace, "app.kubernetes.io/instance=ne,app.kubernetes.io/component=node-agent", 1, 2*time.Minute)
	t.Logf("leader %s", waitLeader(t, enforcers, time.Minute))

	// ztunnel starts after the node agent, which reads new files from their
	// end: what it prints from now on is what the agent must send.
	apply(t, fmt.Sprintf(ztunnelManifests, testpodImage))
	waitFor(t, "ztunnel's records at the enforcer", 2*time.Minute, func() bool {
		var sum float64
		for _, p := range listPods(t, namespace, enforcerPods) {
			sum += metricSum("http://"+p.IP+":8888/metrics", "otelcol_receiver_accepted_log_records")
		}
		return sum > 0
	})
}
