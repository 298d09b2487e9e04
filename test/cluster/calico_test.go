//go:build cluster

package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// goldmaneManifests are Calico's Goldmane played by the tests' pod program:
// the Flows service on :7443, mutual TLS only, with the key pair and client CA
// of the Secret goldmane-key-pair. %[1]s is the testpod image.
const goldmaneManifests = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: goldmane
  namespace: calico-system
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: goldmane}
  template:
    metadata:
      labels: {k8s-app: goldmane}
    spec:
      containers:
        - name: goldmane
          image: %[1]s
          imagePullPolicy: Never
          args: [goldmane]
          ports:
            - {name: grpc, containerPort: 7443}
          readinessProbe:
            httpGet: {path: /healthz, port: 8081}
            periodSeconds: 2
          volumeMounts:
            - {name: tls, mountPath: /etc/goldmane/tls, readOnly: true}
      volumes:
        - name: tls
          secret: {secretName: goldmane-key-pair}
---
apiVersion: v1
kind: Service
metadata:
  name: goldmane
  namespace: calico-system
spec:
  selector: {k8s-app: goldmane}
  ports:
    - {name: grpc, port: 7443, targetPort: grpc}
`

// TestCalico installs the chart for Calico: the enforcer's leader streams from
// the Goldmane pod over mutual TLS, with the client certificate that the
// chart's calico mode reads from tigera-operator (existingSecret, as no
// cert-manager runs here), and Goldmane's certificate from the same CA.
func TestCalico(t *testing.T) {
	require(t)
	importImages(t)
	for _, ns := range []string{"calico-system", "tigera-operator"} {
		createNamespace(t, ns)
	}
	ca := certtest.NewCA(t, "calico")
	server := ca.Server(t, "goldmane", "goldmane.calico-system.svc", "goldmane.calico-system.svc.cluster.local")
	client := ca.Client(t, "network-enforcer")
	secret(t, "calico-system", "goldmane-key-pair", map[string]string{"ca.crt": ca.CertFile, "tls.crt": server.CertFile, "tls.key": server.KeyFile})
	secret(t, "tigera-operator", "goldmane-client", map[string]string{"ca.crt": ca.CertFile, "tls.crt": client.CertFile, "tls.key": client.KeyFile})
	apply(t, fmt.Sprintf(goldmaneManifests, testpodImage))
	goldmane := waitReady(t, "calico-system", "k8s-app=goldmane", 1, 2*time.Minute)[0]

	installChart(t, "controller.provider.name=calico",
		"controller.provider.calico.tls.existingSecret.name=goldmane-client",
		"controller.provider.calico.tls.calicoCA.issue=false")
	logsOnFailure(t, namespace+"/"+enforcerPods, "calico-system/k8s-app=goldmane")
	enforcers := waitReady(t, namespace, enforcerPods, 2, 3*time.Minute)
	waitReady(t, namespace, collectorPods, 1, 2*time.Minute)
	t.Logf("leader %s", waitLeader(t, enforcers, time.Minute))
	waitFor(t, "the leader's stream from Goldmane over mutual TLS", time.Minute, func() bool {
		out, err := httpDo("GET", "http://"+goldmane.IP+":8081/streams", "")
		n, _ := strconv.Atoi(strings.TrimSpace(out))
		return err == nil && n > 0
	})
}
