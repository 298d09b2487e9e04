//go:build cluster

package cluster

import (
	"crypto/x509"
	"fmt"
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

// TestCalico runs the README's quickstart for Calico on the real node, with
// cert-manager: the chart's Issuer on Calico's CA (tigera-ca-private, as
// Calico's operator keeps it) issues the enforcer's client certificate in
// tigera-operator, and the enforcer's leader streams from the Goldmane pod,
// whose certificate the same CA signed, over mutual TLS.
func TestCalico(t *testing.T) {
	requireCilium(t)
	installCertManager(t)
	for _, ns := range []string{"calico-system", "tigera-operator"} {
		createNamespace(t, ns)
	}
	ca := certtest.NewCA(t, "calico")
	server := ca.Server(t, "goldmane", "goldmane.calico-system.svc", "goldmane.calico-system.svc.cluster.local")
	secret(t, "tigera-operator", "tigera-ca-private", map[string]string{"tls.crt": ca.CertFile, "tls.key": ca.KeyFile})
	secret(t, "calico-system", "goldmane-key-pair", map[string]string{"ca.crt": ca.CertFile, "tls.crt": server.CertFile, "tls.key": server.KeyFile})
	apply(t, fmt.Sprintf(goldmaneManifests, testpodImage))
	goldmane := waitReady(t, "calico-system", "k8s-app=goldmane", 1, 2*time.Minute)[0]

	// Two enforcers and the default collector.
	quickstartInstall(t, "calico", 3)
	logsOnFailure(t, namespace+"/"+enforcerPods, "calico-system/k8s-app=goldmane", "cert-manager/app=cert-manager")
	enforcers := listPods(t, namespace, enforcerPods)
	t.Logf("leader %s", waitLeader(t, enforcers))
	client := issued(t, "tigera-operator", fullname+"-goldmane-client")[fullname+"-goldmane-client"]
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the enforcer's Goldmane client certificate is not one of Calico's CA: %v", err)
	}
	issuerMode(t, map[string]map[string]string{
		"deployment/" + fullname:                {"events-tls": fullname + "-events-client"},
		"deployment/" + fullname + "-collector": {"server-tls": fullname + "-collector-server"},
	})
	waitFor(t, "the leader's stream from Goldmane over mutual TLS", time.Minute, func() bool {
		return streams(t, goldmane) > 0
	})
	if t.Failed() {
		return
	}
	t.Run("upgrade", func(t *testing.T) { upgradeToSuiteValues(t, streamOpened(t, goldmane)) })
	if t.Failed() {
		return
	}
	t.Run("journey", func(t *testing.T) { monitorJourney(t, goldmaneReporter(goldmane)) })
}
