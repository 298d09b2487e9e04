//go:build cluster

package cluster

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// secret creates (or replaces) a Secret of the files given, key=path.
func secret(t *testing.T, namespace, name string, files map[string]string) {
	t.Helper()
	args := []string{"-n", namespace, "create", "secret", "generic", name, "--dry-run=client", "-o", "yaml"}
	for key, path := range files {
		args = append(args, "--from-file="+key+"="+path)
	}
	manifest := kubectl(t, args...)
	apply(t, manifest)
}

// ciliumSecrets makes what a Cilium installation with Hubble's TLS holds, from
// one CA of the test's: the relay's server certificate (named as Cilium names
// it, *.hubble-relay.cilium.io) and the relay's client certificate that the
// chart's cilium mode reads (existingSecret hubble-relay-client-certs), as
// Cilium's own chart makes them.
func ciliumSecrets(t *testing.T) {
	t.Helper()
	ca := certtest.NewCA(t, "hubble")
	relay := ca.Server(t, "relay", "*.hubble-relay.cilium.io", "ui.hubble-relay.cilium.io")
	client := ca.Client(t, "network-enforcer")
	secret(t, "kube-system", "hubble-relay-server-certs", map[string]string{"ca.crt": ca.CertFile, "tls.crt": relay.CertFile, "tls.key": relay.KeyFile})
	secret(t, "kube-system", "hubble-relay-client-certs", map[string]string{"ca.crt": ca.CertFile, "tls.crt": client.CertFile, "tls.key": client.KeyFile})
}

// collectorSecrets makes the default collector's server certificate, for
// telemetry.default.tls existingSecret: the enforcer verifies the collector
// with its CA.
func collectorSecrets(t *testing.T) {
	t.Helper()
	events := certtest.NewCA(t, "events")
	svc := fullname + "-collector"
	collector := events.Server(t, "collector", svc, svc+"."+namespace, svc+"."+namespace+".svc", svc+"."+namespace+".svc.cluster.local")
	secret(t, namespace, collectorSecret, map[string]string{"ca.crt": events.CertFile, "tls.crt": collector.CertFile, "tls.key": collector.KeyFile})
}

// collectorSecret is the default collector's server key pair and CA.
const collectorSecret = "collector-tls"
